package protocol

// rebaseExt re-points the slices of the meta and binary fields. Only a meta
// request's Opaque is a slice of the input; for any other request it may be
// left over from an earlier meta request parsed into the same Request, so it
// is dropped rather than re-pointed.
func (r *Request) rebaseExt(re func([]byte) []byte) {
	if r.isMeta() {
		r.Meta.Opaque = re(r.Meta.Opaque)
	} else {
		r.Meta.Opaque = nil
	}
}

// isMeta reports whether r's meta fields belong to it.
func (r *Request) isMeta() bool {
	switch r.Cmd {
	case CmdMetaGet, CmdMetaSet, CmdMetaDelete, CmdMetaArithmetic, CmdMetaNoop, CmdMetaDebug:
		return true
	}
	return false
}
