package transcript

// Difference is one intended difference between tandem, which answers as
// the newest memcached (1.6.45) does, and memcached 1.6.18, the installed
// reference the differential tests compare against. Transcript cases that
// show it cite it by Name ("@ <name>") and give the newest reply ("<+"
// lines) beside 1.6.18's ("<" lines). docs/protocol.md lists the same
// differences for users.
type Difference struct {
	Name string
	// What says what changed, in one sentence.
	What string
	// MetaFlag is, for a meta flag 1.6.18 refuses ("CLIENT_ERROR invalid
	// flag"), that flag: every request using it differs.
	MetaFlag byte
}

// Differences is the one table of intended differences from memcached
// 1.6.18. Every test that compares tandem with the installed memcached
// takes its exceptions from it (directly, or through the transcript cases
// that cite it).
var Differences = []Difference{
	{Name: "short line", What: "a line shorter than four bytes with its line ending (blank, \" \\n\", \"x\\r\\n\") is CLIENT_ERROR bad command line format, not ERROR"},
	{Name: "short storage line", What: "a storage command with fewer than four arguments, or cas without its unique, is CLIENT_ERROR bad command line format (whatever noreply says), not ERROR"},
}

// Lookup returns the difference named name.
func Lookup(name string) (Difference, bool) {
	for _, d := range Differences {
		if d.Name == name {
			return d, true
		}
	}
	return Difference{}, false
}

// IsNewMetaFlag reports whether c is a meta flag that memcached 1.6.18
// refuses and tandem, like newer memcached, accepts.
func IsNewMetaFlag(c byte) bool {
	for _, d := range Differences {
		if d.MetaFlag != 0 && d.MetaFlag == c {
			return true
		}
	}
	return false
}
