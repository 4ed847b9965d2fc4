package cache

import "strconv"

// Outcome is the result of a cache operation. The protocol layer maps it to reply text; the
// cache never produces reply text itself. The zero value is not a valid outcome.
type Outcome uint8

// Outcomes, named after memcached's replies.
const (
	Stored     Outcome = iota + 1 // the write took effect (STORED)
	NotStored                     // add on a live key, replace/append/prepend on a missing one
	Exists                        // cas id mismatch
	NotFound                      // cas, delete, touch, incr/decr on a missing key
	TooLarge                      // key+value+ItemOverhead exceeds MaxItemSize
	NoMemory                      // no room and evictions are disabled
	Deleted                       // delete removed a live item
	Touched                       // touch set a new exptime
	NonNumeric                    // incr/decr on a value that is not a decimal number
)

// outcomeNames holds the outcomes' names in the order of the constants.
var outcomeNames = [...]string{"", "Stored", "NotStored", "Exists", "NotFound", "TooLarge",
	"NoMemory", "Deleted", "Touched", "NonNumeric"}

// String returns the outcome's name, e.g. "NotStored".
func (o Outcome) String() string { return name(outcomeNames[:], int(o), "Outcome") }

// StoreMode selects the storage command a Store call performs.
type StoreMode uint8

// Storage modes, one per memcached storage command.
const (
	Set     StoreMode = iota // store unconditionally
	Add                      // store only if the key is not live
	Replace                  // store only if the key is live
	Append                   // add the data after the live value; flags and TTL are kept
	Prepend                  // add the data before the live value; flags and TTL are kept
	CAS                      // store only if the live item's cas id equals the given one
)

// modeNames holds the modes' names in the order of the constants.
var modeNames = [...]string{"Set", "Add", "Replace", "Append", "Prepend", "CAS"}

// String returns the mode's name, e.g. "Append".
func (m StoreMode) String() string { return name(modeNames[:], int(m), "StoreMode") }

// name returns names[v], or typ(v) for a value without a name.
func name(names []string, v int, typ string) string {
	if v < len(names) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(v) + ")"
}
