package transcript

import "strings"

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
	// MetaFlags lists, for a meta flag whose meaning is new, that flag (or
	// the flag bytes whose handling changed): every request of Command
	// (every meta command when empty) using one of them may differ.
	// AnyMetaFlag: a request of Command with any flag may.
	MetaFlags   string
	AnyMetaFlag bool
	Command     string
}

// Differences is the one table of intended differences from memcached
// 1.6.18. Every test that compares tandem with the installed memcached
// takes its exceptions from it (directly, or through the transcript cases
// that cite it).
var Differences = []Difference{
	{Name: "short line", What: "a line shorter than four bytes with its line ending (blank, \" \\n\", \"x\\r\\n\") is CLIENT_ERROR bad command line format, not ERROR"},
	{Name: "short storage line", What: "a storage command with fewer than four arguments, or cas without its unique, is CLIENT_ERROR bad command line format (whatever noreply says), not ERROR (a cas's data block is then swallowed, see swallow rejected data)"},
	{Name: "swallow rejected data", What: "a storage line refused after its length parsed (key too long, bad flags, exptime or unique, cas without its unique) swallows its data block, and noreply silences the refusal; 1.6.18 read the block as a command"},
	{Name: "meta E", What: "meta flag E<cas> sets the CAS id the change gives the item (ms, mg with N, md with I or x, ma)", MetaFlags: "E"},
	{Name: "md x", What: "md flag x empties the item's value and keeps the item (flags from F, TTL from T, CAS kept or from E)", MetaFlags: "x"},
	{Name: "ms s", What: "ms flag s returns the stored item's size (after append or prepend, the new size; when not stored, the size of the value sent)", MetaFlags: "s", Command: "ms"},
	{Name: "ms N append", What: "ms flag N<ttl> in append or prepend mode stores a missing item as set would, with that TTL"},
	{Name: "mg C", What: "mg flag C<cas> leaves the value out (HD, not VA) when the item's CAS id equals it", MetaFlags: "C", Command: "mg"},
	// classic text commands, 1.6.45
	{Name: "too few tokens", What: "get, gets, gat, gats (gat 10 included), incr, decr, touch, delete and verbosity without their key or number are CLIENT_ERROR bad command line format, not ERROR (END for gat 10)"},
	{Name: "extra tokens", What: "a classic command ignores tokens past those it uses and noreply is its last token (set k 0 0 5 noreply foo answers STORED); 1.6.18 answered ERROR. Not delete: memcapable requires delete a b c d e to fail, so tandem keeps 1.6.18's checks"},
	{Name: "strict numbers", What: "a length, delta, cas unique, touch, gat or flush_all exptime and verbosity level are digits only (a leading - for an exptime) within their type: +5, -0 as a delta, 5\\t-, 5\\r and a length or exptime above 32 bits are refused, a bad length whatever noreply says"},
	{Name: "command name", What: "the command is the bytes before the first space: leading spaces make a line ERROR (flush_all, verbosity and the admin commands excepted), bget is gone, a NUL is a byte of the line, an unknown command honours a last noreply and closes on a last HTTP/ token"},
	{Name: "admin noreply", What: "an lru_crawler or slabs line whose last token is noreply is silent whatever its reply (the token still counts as an argument, so lru_crawler crawl 1 noreply is a silent ERROR); 1.6.18 honoured it for slabs automove only"},
	{Name: "watch noreply", What: "noreply is no watch flag: watch noreply is ERROR (1.6.18 was silent)"},
	{Name: "shutdown disabled", What: "shutdown without -A answers SERVER_ERROR: shutdown not enabled (1.6.18: ERROR: shutdown not enabled), and a last noreply silences it and the invalid mode error"},
	// meta commands, 1.6.45
	{Name: "meta without key", What: "mg, ms, md or ma without a key is CLIENT_ERROR bad command line format, not ERROR"},
	{Name: "meta flag byte", What: "a meta flag token whose first byte is neither a letter (A to z) nor a digit (~, -, a tab, a byte over 126) makes the line CLIENT_ERROR bad command line format, before any other check, on mg, ms, md, ma and me (1.6.18: invalid flag, duplicate flag over 126, me ignored it); ms's data block is not swallowed then", MetaFlags: nonFlagBytes()},
	{Name: "meta M token", What: "the M token's mode is the byte after the M whatever the token's length: mg and md ignore it, ms and ma refuse a lone M (the space or line end after it) as an invalid mode; 1.6.18 refused any M token but of two bytes (incorrect length for M token)", MetaFlags: "M"},
	{Name: "md flag errors", What: "md names its flag error as mg does (duplicate flag, invalid flag, bad token in command line format, bad command line format, error decoding key, options flags are too long), not CLIENT_ERROR invalid or duplicate flag", AnyMetaFlag: true, Command: "md"},
	{Name: "meta flag count", What: "a meta line holds up to 20 tokens (mg, md, ma: 18 flags; ms: 17), one more than 1.6.18; more is CLIENT_ERROR options flags are too long (ms and md too, not options flags too long; ma: invalid or duplicate flag), and ms swallows its data block"},
	{Name: "ms long key", What: "ms with a key over 250 bytes swallows its data block after its CLIENT_ERROR bad command line format"},
	{Name: "meta numbers", What: "numbers in meta tokens are read strictly: digits only, a leading - allowed for N, T, R and ms's length (- alone is 0), at most 11 bytes (N, T, R, F, the length) or 22 (C, E, J, D), within 32 bits (N, T, R, the length) or 64; +5, 000000000005 or T-2147483649 are refused"},
	{Name: "meta F", What: "ms or md flag F above 4294967295 is refused (CLIENT_ERROR bad command line format), not truncated to 32 bits; with --large-client-flags, 64 bits are read"},
	{Name: "ma N q", What: "ma flag q hides the reply (HD or VA) of a counter that N created too"},
	{Name: "me b", What: "me decodes a base64 key (b) only when a token follows the b: me <key> b looks the key up as sent", MetaFlags: "b", Command: "me"},
	{Name: "me exp", What: "me's exp= is the seconds left until the item expires (1.6.18 printed them negated)"},
}

// nonFlagBytes returns the bytes a meta flag token cannot start with since
// memcached 1.6.45: all but letters (A to z) and digits.
func nonFlagBytes() string {
	var b []byte
	for c := 0; c < 256; c++ {
		if !(c >= 'A' && c <= 'z') && !(c >= '0' && c <= '9') && c != ' ' {
			b = append(b, byte(c))
		}
	}
	return string(b)
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

// IsNewMetaFlag reports whether meta flag c of command cmd ("mg", "ms",
// ...) means something new since memcached 1.6.18, so that replies to
// requests using it may differ.
func IsNewMetaFlag(cmd string, c byte) bool {
	for _, d := range Differences {
		if (d.AnyMetaFlag || strings.IndexByte(d.MetaFlags, c) >= 0) && (d.Command == "" || d.Command == cmd) {
			return true
		}
	}
	return false
}
