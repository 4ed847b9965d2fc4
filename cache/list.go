package cache

// list is an intrusive doubly linked list of a shard's live items, most recently used at the
// head. Byte-pressure evictions take from the tail; the expiry sweep walks from the tail towards
// the head with a cursor that survives removals. Not safe for concurrent use: guarded by the
// shard mutex.
type list struct {
	head, tail *item
	n          int
	cursor     *item // next item the sweep examines; nil = start again at the tail
}

// pushFront links it (which must be unlinked) at the head.
func (l *list) pushFront(it *item) {
	it.prev = nil
	it.next = l.head
	if l.head != nil {
		l.head.prev = it
	} else {
		l.tail = it
	}
	l.head = it
	l.n++
}

// remove unlinks it, which must be linked in l.
func (l *list) remove(it *item) {
	if l.cursor == it {
		l.cursor = it.prev
	}
	if it.prev != nil {
		it.prev.next = it.next
	} else {
		l.head = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	} else {
		l.tail = it.prev
	}
	it.prev, it.next = nil, nil
	l.n--
}

// moveToFront makes it, which must be linked in l, the most recently used item.
func (l *list) moveToFront(it *item) {
	if l.head == it {
		return
	}
	l.remove(it)
	l.pushFront(it)
}

// sweepNext returns the next item for the expiry sweep and advances the cursor towards the head;
// it returns nil only for an empty list.
func (l *list) sweepNext() *item {
	it := l.cursor
	if it == nil {
		it = l.tail
	}
	if it != nil {
		l.cursor = it.prev
	}
	return it
}
