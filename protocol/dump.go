package protocol

import "strconv"

// Key dumps: the lines of memcached 1.6.18's "lru_crawler metadump" and
// "stats cachedump", byte for byte. A metadump line ends in "\n" alone (the
// crawler writes them so); both dumps end in RespEnd.

// Replies of "lru_crawler metadump" besides the dump, without "\r\n".
const (
	ReplyBadClass    = "BADCLASS invalid class id"    // a class id out of range, or not a number
	ReplyNotStarted  = "NOTSTARTED no items to crawl" // a class list with no id in it (",")
	ReplyUnknownDump = "ERROR an unknown error happened"
)

// uriUnreserved marks the bytes memcached's uriencode leaves as they are:
// letters, digits and "-._~" (RFC 3986's unreserved characters).
var uriUnreserved = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "-._~" {
		t[c] = true
	}
	return t
}()

// AppendURIEncoded appends key as memcached's metadump prints it: unreserved
// bytes as they are, every other byte as "%XX" in upper-case hex. Any byte
// sequence (a binary key included) gives one space-free token.
func AppendURIEncoded(dst, key []byte) []byte {
	const hex = "0123456789ABCDEF"
	for _, c := range key {
		if uriUnreserved[c] {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', hex[c>>4], hex[c&0xf])
		}
	}
	return dst
}

// MetadumpItem is what one line of "lru_crawler metadump" shows of an item.
type MetadumpItem struct {
	Key        []byte
	Exptime    int64 // absolute unix seconds; 0 = never (printed as -1)
	LastAccess int64 // absolute unix seconds
	CAS        uint64
	Fetched    bool
	Class      int
	Size       int
}

// AppendMetadumpLine appends "key=<uri-encoded key> exp=<exp> la=<la>
// cas=<cas> fetch=yes|no cls=<class> size=<size>\n".
func AppendMetadumpLine(dst []byte, it *MetadumpItem) []byte {
	dst = append(dst, "key="...)
	dst = AppendURIEncoded(dst, it.Key)
	dst = append(dst, " exp="...)
	exp := it.Exptime
	if exp == 0 {
		exp = -1
	}
	dst = strconv.AppendInt(dst, exp, 10)
	dst = append(dst, " la="...)
	dst = strconv.AppendInt(dst, it.LastAccess, 10)
	dst = append(dst, " cas="...)
	dst = strconv.AppendUint(dst, it.CAS, 10)
	if it.Fetched {
		dst = append(dst, " fetch=yes cls="...)
	} else {
		dst = append(dst, " fetch=no cls="...)
	}
	dst = strconv.AppendInt(dst, int64(it.Class), 10)
	dst = append(dst, " size="...)
	dst = strconv.AppendInt(dst, int64(it.Size), 10)
	return append(dst, '\n')
}

// AppendCachedumpLine appends "ITEM <key> [<n> b; <exptime> s]\r\n", the
// line of "stats cachedump" for an item of key with a value of n bytes,
// expiring at exptime (absolute unix seconds, 0 = never). The key is written
// as it is, as memcached does.
func AppendCachedumpLine(dst, key []byte, n int, exptime int64) []byte {
	dst = append(dst, "ITEM "...)
	dst = append(dst, key...)
	dst = append(dst, " ["...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, " b; "...)
	dst = strconv.AppendInt(dst, exptime, 10)
	return append(dst, " s]\r\n"...)
}

// CachedumpLimit is the most bytes memcached's "stats cachedump" reply
// holds, its "END\r\n" included: lines that would pass it are left out.
const CachedumpLimit = 2 << 20
