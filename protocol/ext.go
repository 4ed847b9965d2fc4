package protocol

// rebaseExt re-points slices of dialect-specific fields (meta, binary).
// Owned by the meta/binary work; keep in sync with Request's fields.
func (r *Request) rebaseExt(re func([]byte) []byte) {}
