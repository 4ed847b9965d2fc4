package cache

// index maps a key's hash to its record's chunk: tandem's own table, so that a lookup, a remove
// and its size are the cache's and not a library's. Open addressing with linear probing over
// 8-byte slots: the hash's lower half (which also picks the home slot, by multiplying into the
// table size; the shard was picked by the upper bits) and the chunk handle + 1 (0: an empty
// slot). A remove shifts the slots after it back, so there are no tombstones. The table grows by
// half when it is 7/8 full, so it holds an item in 9-14 bytes.
type index struct {
	slots []uint64
	n     int // occupied slots
}

const minIndexSlots = 16

func (x *index) home(tag uint64) int { return int(tag * uint64(len(x.slots)) >> 32) }

func (x *index) next(i int) int {
	if i++; i == len(x.slots) {
		return 0
	}
	return i
}

// bytes is the table's memory.
func (x *index) bytes() int64 { return int64(cap(x.slots)) * 8 }

// find returns the slot after `from` (from = -1 starts at h's home) that holds h's tag, and the
// handle it names; -1 when there is none. Several keys may share a tag: the caller compares.
// A slot number is valid until the next insert or remove.
func (x *index) find(h uint64, from int) (int, uint32) {
	if len(x.slots) == 0 {
		return -1, 0
	}
	tag := h & 0xffffffff
	i := x.home(tag)
	if from >= 0 {
		i = x.next(from)
	}
	for s := x.slots[i]; s != 0; s = x.slots[i] {
		if s>>32 == tag {
			return i, uint32(s) - 1
		}
		i = x.next(i)
	}
	return -1, 0
}

// insert adds h -> handle; the caller has checked that h has no slot for the same key.
func (x *index) insert(h uint64, handle uint32) {
	if n := x.grownSlots(); n > len(x.slots) {
		x.resize(n)
	}
	x.put(h&0xffffffff<<32 | uint64(handle) + 1)
	x.n++
}

// grownSlots is the table's size after the next insert: half as large again once it is 7/8 full.
func (x *index) grownSlots() int {
	if (x.n+1)*8 > len(x.slots)*7 {
		return max(len(x.slots)*3/2, minIndexSlots)
	}
	return len(x.slots)
}

func (x *index) put(slot uint64) {
	i := x.home(slot >> 32)
	for x.slots[i] != 0 {
		i = x.next(i)
	}
	x.slots[i] = slot
}

// remove removes h -> handle if the table has it.
func (x *index) remove(h uint64, handle uint32) {
	for i, j := x.find(h, -1); i >= 0; i, j = x.find(h, i) {
		if j == handle {
			x.removeAt(i)
			return
		}
	}
}

// replace makes h's slot for handle old name handle new.
func (x *index) replace(h uint64, old, new uint32) {
	for i, j := x.find(h, -1); i >= 0; i, j = x.find(h, i) {
		if j == old {
			x.slots[i] = x.slots[i]>>32<<32 | uint64(new) + 1
			return
		}
	}
}

// removeAt empties slot i and moves back the slots of its probe run that may take its place.
func (x *index) removeAt(i int) {
	x.n--
	for j := x.next(i); x.slots[j] != 0; j = x.next(j) {
		// Slot j may move to i if its home is not in the cyclic range (i, j].
		if h := x.home(x.slots[j] >> 32); (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
	if len(x.slots) > minIndexSlots && x.n*4 < len(x.slots) {
		x.resize(len(x.slots) / 2)
	}
}

// resize rehashes the table into n slots.
func (x *index) resize(n int) {
	old := x.slots
	x.slots = make([]uint64, n)
	for _, s := range old {
		if s != 0 {
			x.put(s)
		}
	}
}
