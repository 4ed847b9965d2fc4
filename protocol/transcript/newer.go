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
	// MetaFlag is, for a meta flag whose meaning is new, that flag: every
	// request of Command (every meta command when empty) using it may
	// differ.
	MetaFlag byte
	Command  string
}

// Differences is the one table of intended differences from memcached
// 1.6.18. Every test that compares tandem with the installed memcached
// takes its exceptions from it (directly, or through the transcript cases
// that cite it).
var Differences = []Difference{
	{Name: "short line", What: "a line shorter than four bytes with its line ending (blank, \" \\n\", \"x\\r\\n\") is CLIENT_ERROR bad command line format, not ERROR"},
	{Name: "short storage line", What: "a storage command with fewer than four arguments, or cas without its unique, is CLIENT_ERROR bad command line format (whatever noreply says), not ERROR (a cas's data block is then swallowed, see swallow rejected data)"},
	{Name: "swallow rejected data", What: "a storage line refused after its length parsed (key too long, bad flags, exptime or unique, cas without its unique) swallows its data block, and noreply silences the refusal; 1.6.18 read the block as a command"},
	{Name: "meta E", What: "meta flag E<cas> sets the CAS id the change gives the item (ms, mg with N, md with I or x, ma)", MetaFlag: 'E'},
	{Name: "md x", What: "md flag x empties the item's value and keeps the item (flags from F, TTL from T, CAS kept or from E)", MetaFlag: 'x'},
	{Name: "ms s", What: "ms flag s returns the stored item's size (after append or prepend, the new size)", MetaFlag: 's', Command: "ms"},
	{Name: "ms N append", What: "ms flag N<ttl> in append or prepend mode stores a missing item as set would, with that TTL"},
	{Name: "mg C", What: "mg flag C<cas> leaves the value out (HD, not VA) when the item's CAS id equals it", MetaFlag: 'C', Command: "mg"},
	// classic text commands, 1.6.45
	{Name: "too few tokens", What: "get, gets, gat, gats (gat 10 included), incr, decr, touch, delete and verbosity without their key or number are CLIENT_ERROR bad command line format, not ERROR (END for gat 10)"},
	{Name: "extra tokens", What: "a classic command ignores tokens past those it uses and noreply is its last token (set k 0 0 5 noreply foo answers STORED); 1.6.18 answered ERROR. Not delete: memcapable requires delete a b c d e to fail, so tandem keeps 1.6.18's checks"},
	{Name: "strict numbers", What: "a length, delta, cas unique, touch, gat or flush_all exptime and verbosity level are digits only (a leading - for an exptime) within their type: +5, -0 as a delta, 5\\t-, 5\\r and a length or exptime above 32 bits are refused, a bad length whatever noreply says"},
	{Name: "command name", What: "the command is the bytes before the first space: leading spaces make a line ERROR (flush_all, verbosity and the admin commands excepted), bget is gone, a NUL is a byte of the line, an unknown command honours a last noreply and closes on a last HTTP/ token"},
	{Name: "shutdown disabled", What: "shutdown without -A answers SERVER_ERROR: shutdown not enabled (1.6.18: ERROR: shutdown not enabled), and a last noreply silences it and the invalid mode error"},
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
		if d.MetaFlag != 0 && d.MetaFlag == c && (d.Command == "" || d.Command == cmd) {
			return true
		}
	}
	return false
}
