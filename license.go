// Package tandem is the root of the tandem module: a memcached-compatible
// cache server. The server is cmd/tandem; this package only carries the
// module's license text for it to print (tandem -i).
package tandem

import _ "embed"

// License is the text of the LICENSE file.
//
//go:embed LICENSE
var License string
