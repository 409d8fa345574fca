package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"runtime/debug"
	"syscall"
)

// The bbolt file layout (go.etcd.io/bbolt/internal/common), read here
// with plain reads so that a damaged file can be judged without mapping
// it: bbolt follows page pointers through its memory map unchecked, and a
// bad pointer makes it fault, panic or loop.
const (
	pageHeaderSize = 16 // id uint64, flags uint16, count uint16, overflow uint32
	elementSize    = 16 // branch: pos, ksize uint32, pgid uint64; leaf: flags, pos, ksize, vsize uint32
	bucketHeader   = 16 // root pgid uint64, sequence uint64

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	flagBucket   = 0x01 // a leaf element that is a nested bucket

	metaMagic    = 0xED0CDAED
	metaVersion  = 2
	metaSumBytes = 56 // the meta fields the checksum covers
	noFreelist   = ^uint64(0)

	// maxTreeDepth is deeper than any B+tree bbolt can build in a file it
	// can map; a deeper path is a damaged pointer.
	maxTreeDepth = 64
	// maxFileProblems bounds what a file check reports.
	maxFileProblems = 20
)

var native = binary.NativeEndian

// rawMeta is one meta page as read from the file.
type rawMeta struct {
	pageSize                  uint32
	root, freelist, hwm, txid uint64
	err                       error // why bbolt would not use it
}

func parseMeta(page []byte) rawMeta {
	if len(page) < pageHeaderSize+metaSumBytes+8 {
		return rawMeta{err: errors.New("short meta page")}
	}
	b := page[pageHeaderSize:]
	m := rawMeta{
		pageSize: native.Uint32(b[8:]),
		root:     native.Uint64(b[16:]),
		freelist: native.Uint64(b[32:]),
		hwm:      native.Uint64(b[40:]),
		txid:     native.Uint64(b[48:]),
	}
	h := fnv.New64a()
	h.Write(b[:metaSumBytes])
	switch {
	case native.Uint32(b[0:]) != metaMagic:
		m.err = errors.New("no bbolt magic")
	case native.Uint32(b[4:]) != metaVersion:
		m.err = fmt.Errorf("bbolt version %d", native.Uint32(b[4:]))
	case native.Uint64(b[metaSumBytes:]) != h.Sum64():
		m.err = errors.New("checksum mismatch")
	}
	return m
}

// fileView is what a file check starts from: the page size, the root
// bucket's page, the high water mark and the freelist page of one meta.
type fileView struct {
	pageSize    int64
	root, hwm   uint64
	freelist    uint64 // noFreelist: none
	metaTrouble []string
}

// fileCheck walks a bbolt file with bounded reads. In the quick mode it
// reads the meta pages, the freelist, every branch page and the leaves of
// the buckets that hold buckets (the root bucket, routes, invocations),
// and of other leaves only their ids (and one header per branch page),
// which is enough to find the page pointers bbolt follows from one page
// to another that lead out of the file, into free pages, twice to one
// page or round a cycle. In the full mode it reads every page and checks that
// every key and value lies inside its page, so that bbolt's own Check can
// walk the file without faulting.
type fileCheck struct {
	data     []byte // the file, mapped read-only
	view     fileView
	full     bool
	free     pageSet
	seen     pageSet
	problems []string
	dropped  int
}

func (c *fileCheck) addf(format string, args ...any) {
	if len(c.problems) < maxFileProblems {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	} else {
		c.dropped++
	}
}

func (c *fileCheck) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	errs := make([]error, 0, len(c.problems)+1)
	for _, p := range c.problems {
		errs = append(errs, errors.New(p))
	}
	if c.dropped > 0 {
		errs = append(errs, fmt.Errorf("and %d more problems", c.dropped))
	}
	return errors.Join(errs...)
}

// readMetas reads both meta pages and chooses the one bbolt uses: the one
// with the higher transaction id if it is valid, else the other. It also
// reports what looks wrong with them.
func readMetas(data []byte) (fileView, error) {
	var v fileView
	at := func(off int64) []byte {
		if off >= int64(len(data)) {
			return nil
		}
		return data[off:min(off+0x1000, int64(len(data)))]
	}
	first := at(0)
	m0 := parseMeta(first)
	ps := int64(m0.pageSize)
	if m0.err != nil || !validPageSize(ps) {
		ps = 0
		for try := int64(1024); try <= 64<<10; try *= 2 {
			if m := parseMeta(at(try)); m.err == nil && int64(m.pageSize) == try {
				ps = try
				break
			}
		}
		if ps == 0 {
			return v, errors.New("neither meta page is readable: this is not an intact bbolt file")
		}
	}
	second := at(ps)
	m1 := parseMeta(second)
	for i, page := range [][]byte{first, second} {
		m := []rawMeta{m0, m1}[i]
		if m.err != nil {
			v.metaTrouble = append(v.metaTrouble, fmt.Sprintf("meta page %d: %v", i, m.err))
		} else if h := parseHeader(page); h.id != uint64(i) || h.flags != flagMeta {
			// The header is not covered by the checksum; bbolt reads
			// the meta by its offset, but its Check asserts the id.
			v.metaTrouble = append(v.metaTrouble, fmt.Sprintf("meta page %d: its header says page %d, type %s", i, h.id, pageType(h.flags)))
		}
	}
	a, b := m0, m1
	if m1.txid > m0.txid {
		a, b = m1, m0
	}
	m := a
	if a.err != nil {
		m = b
	}
	if m.err != nil {
		return v, errors.New("neither meta page is valid")
	}
	v.pageSize, v.root, v.hwm, v.freelist = ps, m.root, m.hwm, m.freelist
	if int64(m.pageSize) != ps {
		v.metaTrouble = append(v.metaTrouble, fmt.Sprintf("the meta page names page size %d, the file uses %d", m.pageSize, ps))
	}
	return v, nil
}

func validPageSize(ps int64) bool { return ps >= 512 && ps <= 64<<10 && ps&(ps-1) == 0 }

// looksInconsistent reports what a quick look at the meta pages and the
// pages they name finds wrong, without walking the tree.
func looksInconsistent(data []byte, v fileView) []string {
	trouble := append([]string(nil), v.metaTrouble...)
	size, ps := int64(len(data)), v.pageSize
	switch {
	case size%ps != 0:
		trouble = append(trouble, fmt.Sprintf("the file is %d bytes, not whole pages of %d", size, ps))
	case v.hwm < 2 || uint64(size/ps) < v.hwm:
		trouble = append(trouble, fmt.Sprintf("the meta page names %d pages, the file holds %d", v.hwm, size/ps))
	}
	if hdr, ok := header(data, ps, v.root); v.root < 2 || !ok || hdr.id != v.root || (hdr.flags != flagBranch && hdr.flags != flagLeaf) {
		trouble = append(trouble, fmt.Sprintf("the root page %d is not a branch or leaf page", v.root))
	}
	if v.freelist != noFreelist {
		if hdr, ok := header(data, ps, v.freelist); v.freelist < 2 || !ok || hdr.id != v.freelist || hdr.flags != flagFreelist {
			trouble = append(trouble, fmt.Sprintf("page %d is not the freelist page the meta page names", v.freelist))
		}
	}
	return trouble
}

type pageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

// header reads the header of page id, if the file holds it.
func header(data []byte, ps int64, id uint64) (pageHeader, bool) {
	if id >= uint64(int64(len(data))/ps) {
		return pageHeader{}, false
	}
	return parseHeader(data[int64(id)*ps:]), true
}

func parseHeader(b []byte) pageHeader {
	if len(b) < pageHeaderSize {
		return pageHeader{}
	}
	return pageHeader{id: native.Uint64(b), flags: native.Uint16(b[8:]), count: native.Uint16(b[10:]), overflow: native.Uint32(b[12:])}
}

// run checks the file from view.
func (c *fileCheck) run() {
	ps := c.view.pageSize
	filePages := uint64(int64(len(c.data)) / ps)
	if c.view.hwm > filePages {
		c.addf("the file is truncated: the meta page names %d pages, the file holds %d", c.view.hwm, filePages)
		return
	}
	c.free, c.seen = newPageSet(c.view.hwm), newPageSet(c.view.hwm)
	c.seen.add(0)
	c.seen.add(1)
	if c.view.freelist != noFreelist {
		c.freelist(c.view.freelist)
	}
	if c.view.root < 2 || c.view.root >= c.view.hwm {
		c.addf("the root bucket's page %d is outside the file's %d pages", c.view.root, c.view.hwm)
		return
	}
	c.bucket(c.view.root, "", true)
}

// page returns page id with its overflow pages, checking its header.
func (c *fileCheck) page(id uint64, what string) ([]byte, pageHeader, bool) {
	ps := c.view.pageSize
	if id < 2 || id >= c.view.hwm {
		c.addf("%s: page %d is outside the file's %d pages", what, id, c.view.hwm)
		return nil, pageHeader{}, false
	}
	hdr, ok := header(c.data, ps, id)
	if !ok {
		c.addf("%s: page %d is past the file's end", what, id)
		return nil, pageHeader{}, false
	}
	if hdr.id != id {
		c.addf("%s: page %d says it is page %d", what, id, hdr.id)
		return nil, hdr, false
	}
	if uint64(hdr.overflow) >= c.view.hwm-id {
		c.addf("%s: page %d runs %d pages past the file's end", what, id, hdr.overflow)
		return nil, hdr, false
	}
	for i := uint64(0); i <= uint64(hdr.overflow); i++ {
		if c.seen.has(id + i) {
			c.addf("%s: page %d is reached twice (a cycle or a damaged pointer)", what, id+i)
			return nil, hdr, false
		}
		if c.free.has(id + i) {
			c.addf("%s: page %d is in use and also listed as free", what, id+i)
			return nil, hdr, false
		}
	}
	for i := uint64(0); i <= uint64(hdr.overflow); i++ {
		c.seen.add(id + i)
	}
	return c.data[int64(id)*ps : (int64(id)+int64(hdr.overflow)+1)*ps], hdr, true
}

func (c *fileCheck) freelist(id uint64) {
	b, hdr, ok := c.page(id, "the freelist")
	if !ok {
		return
	}
	if hdr.flags != flagFreelist {
		c.addf("the freelist: page %d is a %s page", id, pageType(hdr.flags))
		return
	}
	count, at := uint64(hdr.count), uint64(pageHeaderSize)
	if hdr.count == 0xFFFF {
		count, at = native.Uint64(b[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > (uint64(len(b))-at)/8 {
		c.addf("the freelist: page %d lists %d pages, more than it holds", id, count)
		return
	}
	var prev uint64
	for i := uint64(0); i < count; i++ {
		free := native.Uint64(b[at+8*i:])
		switch {
		case free < 2 || free >= c.view.hwm:
			c.addf("the freelist lists page %d, outside the file's %d pages", free, c.view.hwm)
			return
		case i > 0 && free <= prev:
			c.addf("the freelist lists page %d after page %d: out of order or twice", free, prev)
			return
		case c.seen.has(free):
			c.addf("the freelist lists page %d, which is the freelist itself", free)
			return
		}
		c.free.add(free)
		prev = free
	}
}

// bucket checks the tree of the bucket whose root is page root. holds
// says whether its leaves are read for nested buckets in the quick mode.
func (c *fileCheck) bucket(root uint64, name string, holds bool) {
	type frame struct {
		id    uint64
		depth int
	}
	what := "bucket " + printBucket(name)
	stack := []frame{{root, 1}}
	for len(stack) > 0 && len(c.problems) < maxFileProblems {
		fr := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if fr.depth > maxTreeDepth {
			c.addf("%s: its tree is deeper than %d levels at page %d (a cycle or a damaged pointer)", what, maxTreeDepth, fr.id)
			return
		}
		b, hdr, ok := c.page(fr.id, what)
		if !ok {
			continue
		}
		switch hdr.flags {
		case flagBranch:
			children := c.branch(b, hdr, fr.id, what)
			if len(children) > 0 && !holds && !c.full {
				// All children of a branch page are on one level. If
				// the first is a leaf, so are the others: in the quick
				// mode their ids are checked, not their contents.
				first, ok := header(c.data, c.view.pageSize, children[0])
				if ok && first.flags == flagLeaf {
					for _, child := range children {
						c.mark(child, what)
					}
					continue
				}
			}
			for _, child := range children {
				stack = append(stack, frame{child, fr.depth + 1})
			}
		case flagLeaf:
			for _, nb := range c.leaf(b, hdr, fr.id, what) {
				c.bucket(nb.root, nb.name, c.full || (name == "" && holdsBuckets(nb.name)))
			}
		default:
			c.addf("%s: page %d is a %s page, not a branch or leaf page", what, fr.id, pageType(hdr.flags))
		}
	}
}

// mark records a leaf page that the quick mode does not read: its id
// must be inside the file, not free and not reached before.
func (c *fileCheck) mark(id uint64, what string) {
	switch {
	case id < 2 || id >= c.view.hwm:
		c.addf("%s: page %d is outside the file's %d pages", what, id, c.view.hwm)
	case c.seen.has(id):
		c.addf("%s: page %d is reached twice (a cycle or a damaged pointer)", what, id)
	case c.free.has(id):
		c.addf("%s: page %d is in use and also listed as free", what, id)
	default:
		c.seen.add(id)
	}
}

// pageSet is a set of page ids below a high water mark.
type pageSet []uint64

func newPageSet(hwm uint64) pageSet { return make(pageSet, (hwm+63)/64) }

func (s pageSet) has(id uint64) bool { return id/64 < uint64(len(s)) && s[id/64]&(1<<(id%64)) != 0 }

func (s pageSet) add(id uint64) {
	if id/64 < uint64(len(s)) {
		s[id/64] |= 1 << (id % 64)
	}
}

// holdsBuckets names the top-level buckets of the schema whose values are
// buckets.
func holdsBuckets(name string) bool {
	return name == string(bucketRoutes) || name == string(bucketInvocations)
}

// branch checks a branch page's elements and returns its children.
func (c *fileCheck) branch(b []byte, hdr pageHeader, id uint64, what string) []uint64 {
	n := int(hdr.count)
	if n == 0 || pageHeaderSize+n*elementSize > len(b) {
		c.addf("%s: branch page %d has %d elements, which do not fit it", what, id, n)
		return nil
	}
	children := make([]uint64, 0, n)
	for i := range n {
		e := b[pageHeaderSize+i*elementSize:]
		pos, ksize, child := uint64(native.Uint32(e)), uint64(native.Uint32(e[4:])), native.Uint64(e[8:])
		if off := uint64(pageHeaderSize + i*elementSize); off+pos+ksize > uint64(len(b)) {
			c.addf("%s: branch page %d: key %d lies outside the page", what, id, i)
			return nil
		}
		if child < 2 || child >= c.view.hwm {
			c.addf("%s: branch page %d: element %d points at page %d, outside the file's %d pages", what, id, i, child, c.view.hwm)
			return nil
		}
		children = append(children, child)
	}
	return children
}

type nestedBucket struct {
	name string
	root uint64
}

// leaf checks a leaf page's elements (or an inline bucket's page) and
// returns the nested buckets it holds that have pages of their own.
func (c *fileCheck) leaf(b []byte, hdr pageHeader, id uint64, what string) []nestedBucket {
	n := int(hdr.count)
	if pageHeaderSize+n*elementSize > len(b) {
		c.addf("%s: leaf page %d has %d elements, which do not fit it", what, id, n)
		return nil
	}
	var nested []nestedBucket
	for i := range n {
		off := uint64(pageHeaderSize + i*elementSize)
		e := b[off:]
		flags, pos := native.Uint32(e), uint64(native.Uint32(e[4:]))
		ksize, vsize := uint64(native.Uint32(e[8:])), uint64(native.Uint32(e[12:]))
		if off+pos+ksize+vsize > uint64(len(b)) {
			c.addf("%s: leaf page %d: element %d lies outside the page", what, id, i)
			return nil
		}
		if flags&flagBucket == 0 {
			continue
		}
		key := string(b[off+pos : off+pos+ksize])
		value := b[off+pos+ksize : off+pos+ksize+vsize]
		if len(value) < bucketHeader {
			c.addf("%s: leaf page %d: nested bucket %s has no bucket header", what, id, printBucket(key))
			return nil
		}
		root := native.Uint64(value)
		if root != 0 {
			nested = append(nested, nestedBucket{key, root})
			continue
		}
		inline := value[bucketHeader:]
		if len(inline) < pageHeaderSize {
			c.addf("%s: leaf page %d: inline bucket %s is truncated", what, id, printBucket(key))
			return nil
		}
		ih := parseHeader(inline)
		if ih.flags != flagLeaf {
			c.addf("%s: leaf page %d: inline bucket %s is not a leaf page", what, id, printBucket(key))
			return nil
		}
		for _, nb := range c.leaf(inline, ih, id, what+"/"+printBucket(key)) {
			c.addf("%s: leaf page %d: inline bucket %s holds bucket %s, which bbolt never writes", what, id, printBucket(key), printBucket(nb.name))
		}
	}
	return nested
}

func pageType(flags uint16) string {
	switch flags {
	case flagBranch:
		return "branch"
	case flagLeaf:
		return "leaf"
	case flagMeta:
		return "meta"
	case flagFreelist:
		return "freelist"
	}
	return fmt.Sprintf("unknown (flags %#x)", flags)
}

func printBucket(name string) string {
	if name == "" {
		return "(root)"
	}
	return printKey([]byte(name))
}

// checkFile checks the bbolt file f from the meta page bbolt uses:
// quickly unless the meta pages or the pages they name look wrong, or
// full is set. A damaged meta page that bbolt can do without (it uses the
// other one) is a problem only when reportMeta is set. It returns nil or
// the problems found, joined.
//
// The file is mapped read-only and every read is bounded by its size; the
// caller holds the store's lock, so it does not shrink meanwhile (and if
// it did, the fault is recovered, not fatal).
func checkFile(f *os.File, full, reportMeta bool) (err error) {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < 2*pageHeaderSize || fi.Size() != int64(int(fi.Size())) {
		return fmt.Errorf("the file is %d bytes, too short for a bbolt file", fi.Size())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the file: %w", err)
	}
	defer syscall.Munmap(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			err = errors.New("the file changed size while it was checked")
		}
	}()
	v, err := readMetas(data)
	if err != nil {
		return err
	}
	if len(looksInconsistent(data, v)) > 0 {
		full = true
	}
	c := &fileCheck{data: data, view: v, full: full}
	if reportMeta {
		for _, m := range v.metaTrouble {
			c.addf("%s; bbolt reads the other one", m)
		}
	}
	c.run()
	return c.err()
}
