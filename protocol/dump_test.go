package protocol

import "testing"

// TestAppendURIEncoded checks memcached's uriencode: RFC 3986's unreserved
// bytes as they are, every other byte as upper-case %XX. The cases come
// from memcached 1.6.18's metadump of the same keys.
func TestAppendURIEncoded(t *testing.T) {
	tests := []struct {
		name, key, want string
	}{
		{"plain", "foo", "foo"},
		{"unreserved", "AZaz09-._~", "AZaz09-._~"},
		{"reserved", "a/b%c", "a%2Fb%25c"},
		{"percent-encoded text", "a%20", "a%2520"},
		{"binary", "\x00\x01\x02\xff", "%00%01%02%FF"},
		{"punctuation", ":+ =&?#", "%3A%2B%20%3D%26%3F%23"},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendURIEncoded([]byte("x"), []byte(tc.key))); got != "x"+tc.want {
				t.Fatalf("AppendURIEncoded(%q) = %q, want %q", tc.key, got, "x"+tc.want)
			}
		})
	}
}

func TestAppendMetadumpLine(t *testing.T) {
	tests := []struct {
		name string
		it   MetadumpItem
		want string
	}{
		{"never expires, fetched", MetadumpItem{Key: []byte("foo"), LastAccess: 1796138108, CAS: 1, Fetched: true, Class: 1, Size: 69},
			"key=foo exp=-1 la=1796138108 cas=1 fetch=yes cls=1 size=69\n"},
		{"expires, escaped", MetadumpItem{Key: []byte("a/b%c~-._"), Exptime: 1796138208, LastAccess: 1796138108, CAS: 2, Class: 1, Size: 70},
			"key=a%2Fb%25c~-._ exp=1796138208 la=1796138108 cas=2 fetch=no cls=1 size=70\n"},
		{"no cas", MetadumpItem{Key: []byte("k"), LastAccess: 5, Class: 64, Size: 50},
			"key=k exp=-1 la=5 cas=0 fetch=no cls=64 size=50\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendMetadumpLine(nil, &tc.it)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAppendCachedumpLine(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		n       int
		exptime int64
		want    string
	}{
		{"never expires", "foo", 3, 0, "ITEM foo [3 b; 0 s]\r\n"},
		{"expires, raw key", "a/b%c~-._", 2, 1796138208, "ITEM a/b%c~-._ [2 b; 1796138208 s]\r\n"},
		{"empty value", "k", 0, 0, "ITEM k [0 b; 0 s]\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendCachedumpLine(nil, []byte(tc.key), tc.n, tc.exptime)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAppendMetadumpLineAllocs(t *testing.T) {
	it := MetadumpItem{Key: []byte("some:key/with%escapes"), Exptime: 1796138208, LastAccess: 1796138108, CAS: 1 << 40, Class: 12, Size: 1234}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = AppendMetadumpLine(buf[:0], &it) }); n != 0 {
		t.Fatalf("AppendMetadumpLine allocates %v times per line", n)
	}
}
