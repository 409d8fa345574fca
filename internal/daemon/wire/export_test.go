package wire

// The tests are package wire_test, so that they link package wirecbor,
// which imports wire, as every program that reads more than a command
// line's frames does. These are the internals they look at.

// Used is how many frame bytes b counts as held.
func (b *Budget) Used() int64 { return b.used }

// Socket is c's socket.
func (c *Conn) Socket() Socket { return c.c }

var CloseFiles = closeFiles

// WithoutCodec runs f as a program that does not link package wirecbor.
func WithoutCodec(f func()) {
	c := codec.Swap(nil)
	defer codec.Store(c)
	f()
}

// HandCoded reports whether m, a member of Msg, encodes itself and
// whether it decodes itself.
func HandCoded(m any) (encodes, decodes bool) {
	_, encodes = m.(memberEncoder)
	_, decodes = m.(memberDecoder)
	return encodes, decodes
}
