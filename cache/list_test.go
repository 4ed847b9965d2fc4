package cache

import (
	"slices"
	"testing"
)

func listKeys(l *list) []string {
	var out []string
	for it := l.head; it != nil; it = it.next {
		out = append(out, string(it.key()))
	}
	return out
}

func newItems(keys ...string) map[string]*item {
	m := map[string]*item{}
	for _, k := range keys {
		it := &item{}
		it.fill([]byte(k), Set, nil)
		m[k] = it
	}
	return m
}

func TestList(t *testing.T) {
	items := newItems("a", "b", "c", "d")
	var l list
	for _, k := range []string{"a", "b", "c", "d"} {
		l.pushFront(items[k])
	}
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"pushed", func() {}, []string{"d", "c", "b", "a"}},
		{"move tail to front", func() { l.moveToFront(items["a"]) }, []string{"a", "d", "c", "b"}},
		{"move head is a no-op", func() { l.moveToFront(items["a"]) }, []string{"a", "d", "c", "b"}},
		{"remove middle", func() { l.remove(items["d"]) }, []string{"a", "c", "b"}},
		{"remove tail", func() { l.remove(items["b"]) }, []string{"a", "c"}},
		{"remove head", func() { l.remove(items["a"]) }, []string{"c"}},
		{"remove last", func() { l.remove(items["c"]) }, nil},
	}
	for _, st := range steps {
		st.do()
		if got := listKeys(&l); !slices.Equal(got, st.want) || l.n != len(st.want) {
			t.Fatalf("%s: got %v (n=%d), want %v", st.name, got, l.n, st.want)
		}
	}
	if l.head != nil || l.tail != nil {
		t.Fatal("empty list keeps pointers")
	}
}

func TestListSweepCursor(t *testing.T) {
	items := newItems("a", "b", "c", "d")
	var l list
	for _, k := range []string{"a", "b", "c", "d"} {
		l.pushFront(items[k]) // head d c b a tail
	}
	var seen []string
	next := func() { seen = append(seen, string(l.sweepNext().key())) }
	next()                    // a, the tail; the cursor moves to b
	l.remove(items["b"])      // the cursor's item goes: the cursor steps to c
	next()                    // c; the cursor moves to d
	l.moveToFront(items["a"]) // list a d c
	next()                    // d; the cursor moves to a
	l.moveToFront(items["c"]) // list c a d
	next()                    // a; the cursor moves to c
	next()                    // c, the head: the next sweep restarts at the tail
	next()                    // d
	if want := []string{"a", "c", "d", "a", "c", "d"}; !slices.Equal(seen, want) {
		t.Fatalf("sweep order %v, want %v", seen, want)
	}
	var empty list
	if empty.sweepNext() != nil {
		t.Fatal("sweep of an empty list returned an item")
	}
}
