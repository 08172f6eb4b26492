package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"path"
	"strings"
)

// archive is a zip file opened under the limits: entry count, declared and actual sizes, compression
// ratio and total bytes are checked before and while inflating, so a bomb is refused early and a lying
// central directory cannot make us read more than it declared.
type archive struct {
	files map[string]*zip.File
	l     Limits
	total int64
}

func openArchive(data []byte, l Limits) (*archive, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, Terminal("not a valid Office file (the zip container is unreadable: %v)", err)
	}
	if len(zr.File) > l.MaxEntries {
		return nil, Terminal("the file has %d zip entries, the limit is %d", len(zr.File), l.MaxEntries)
	}
	a := &archive{files: map[string]*zip.File{}, l: l}
	for _, f := range zr.File {
		name := f.Name
		if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.Contains(name, "\x00") {
			return nil, Terminal("the file has an insecure zip entry name %q", name)
		}
		for _, seg := range strings.Split(name, "/") {
			if seg == ".." {
				return nil, Terminal("the file has an insecure zip entry name %q", name)
			}
		}
		if f.UncompressedSize64 > uint64(l.MaxEntryBytes) {
			return nil, Terminal("zip entry %s would inflate to %d bytes, the limit is %d", name, f.UncompressedSize64, l.MaxEntryBytes)
		}
		if f.CompressedSize64 > 0 && f.UncompressedSize64/f.CompressedSize64 > uint64(l.MaxRatio) && f.UncompressedSize64 > 1<<20 {
			return nil, Terminal("zip entry %s has a compression ratio over %d (a zip bomb?)", name, l.MaxRatio)
		}
		a.files[name] = f
	}
	return a, nil
}

// read inflates one entry; a missing entry is (nil, nil).
func (a *archive) read(name string) ([]byte, error) {
	f := a.files[name]
	if f == nil {
		return nil, nil
	}
	if strings.HasSuffix(strings.ToLower(name), ".zip") {
		return nil, Terminal("nested archives are not read")
	}
	rc, err := f.Open()
	if err != nil {
		return nil, Terminal("zip entry %s: %v", name, err)
	}
	defer rc.Close()
	declared := int64(f.UncompressedSize64)
	b, err := io.ReadAll(io.LimitReader(rc, declared+1))
	if err != nil && !errors.Is(err, zip.ErrChecksum) {
		return nil, Terminal("zip entry %s is damaged: %v", name, err)
	}
	if int64(len(b)) > declared || errors.Is(err, zip.ErrChecksum) {
		return nil, Terminal("zip entry %s holds more data than its header declares", name)
	}
	if f.CompressedSize64 > 0 && int64(len(b)) > 1<<20 && uint64(len(b))/f.CompressedSize64 > uint64(a.l.MaxRatio) {
		return nil, Terminal("zip entry %s has a compression ratio over %d (a zip bomb?)", name, a.l.MaxRatio)
	}
	a.total += int64(len(b))
	if a.total > a.l.MaxTotalBytes {
		return nil, Terminal("the file inflates to more than %d bytes", a.l.MaxTotalBytes)
	}
	return b, nil
}

// node is a minimal XML element tree: local names only (OOXML prefixes are fixed by the standard).
type node struct {
	name  string
	attrs map[string]string
	kids  []*node
	text  strings.Builder
}

func (n *node) attr(name string) string {
	if n == nil {
		return ""
	}
	return n.attrs[name]
}

// child returns the first direct child with this name, or nil.
func (n *node) child(name string) *node {
	if n == nil {
		return nil
	}
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// each calls fn for every descendant (pre-order) until fn returns false for a subtree.
func (n *node) each(fn func(*node) bool) {
	for _, k := range n.kids {
		if fn(k) {
			k.each(fn)
		}
	}
}

// parseXML builds the tree with a depth limit, strict parsing and no entity expansion (undefined
// entities are errors; Go never fetches external ones), checking ctx as it goes.
func parseXML(ctx context.Context, data []byte, l Limits) (*node, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	root := &node{name: "#root"}
	stack := []*node{root}
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, Terminal("malformed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) > l.MaxXMLDepth {
				return nil, Terminal("XML nested deeper than %d elements", l.MaxXMLDepth)
			}
			n := &node{name: t.Name.Local}
			if len(t.Attr) > 0 {
				n.attrs = make(map[string]string, len(t.Attr))
				for _, a := range t.Attr {
					n.attrs[a.Name.Local] = a.Value
				}
			}
			parent := stack[len(stack)-1]
			parent.kids = append(parent.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			stack[len(stack)-1].text.Write(t)
		case xml.Directive:
			if bytes.Contains(bytes.ToUpper(t), []byte("ENTITY")) {
				return nil, Terminal("XML entity declarations are not accepted")
			}
		}
	}
	return root, nil
}

func (a *archive) xml(ctx context.Context, name string) (*node, error) {
	b, err := a.read(name)
	if err != nil || b == nil {
		return nil, err
	}
	return parseXML(ctx, b, a.l)
}

// rels reads a part's relationships: id -> target path resolved against the part's folder.
func (a *archive) rels(ctx context.Context, part string) (map[string]string, error) {
	dir, file := path.Split(part)
	root, err := a.xml(ctx, dir+"_rels/"+file+".rels")
	if err != nil || root == nil {
		return map[string]string{}, err
	}
	out := map[string]string{}
	root.each(func(n *node) bool {
		if n.name == "Relationship" {
			target := n.attr("Target")
			if !strings.HasPrefix(target, "/") {
				target = path.Join(dir, target)
			}
			out[n.attr("Id")] = strings.TrimPrefix(target, "/")
		}
		return true
	})
	return out, nil
}

func missingPart(kind, part string) error {
	return Terminal("not a valid %s file: %s is missing", kind, part)
}
