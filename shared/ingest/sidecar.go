package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// Sidecars (docs/metadata-filters.md): "<file>.metadata.json" beside a file holds metadata for it in
// the Amazon Bedrock knowledge base format, {"metadataAttributes": {"key": value, ...}}, a value being
// a string, a number, a boolean, a list of strings, or the typed form {"value": {"type": "STRING" |
// "NUMBER" | "BOOLEAN" | "STRING_LIST", "stringValue" | "numberValue" | "booleanValue" |
// "stringListValue": ...}, "includeForEmbedding": ...}. The sidecar is never a document itself; its
// metadata is the top layer of the file's (over front matter, file properties and derived fields), and
// a change to it re-ingests the file (its hash is part of the file's content hash).

// SidecarSuffix ends a sidecar's name.
const SidecarSuffix = ".metadata.json"

// MaxSidecarBytes bounds a sidecar file.
const MaxSidecarBytes = 64 << 10

// SidecarOf returns the file a sidecar path describes; false when path is not a sidecar.
func SidecarOf(path string) (string, bool) {
	if !strings.HasSuffix(path, SidecarSuffix) || len(path) == len(SidecarSuffix) {
		return "", false
	}
	return strings.TrimSuffix(path, SidecarSuffix), true
}

// ReadSidecar reads path's sidecar from disk: nil (no error) when there is none; Invalid, saying
// what is wrong, for one that cannot be used.
func ReadSidecar(path string) (rag.Metadata, error) {
	st, err := os.Stat(path + SidecarSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, rag.E("ingest.ReadSidecar", rag.KindInvalid, err)
	}
	if st.Size() > MaxSidecarBytes {
		return nil, rag.Errorf("ingest.ReadSidecar", rag.KindInvalid, "%s is larger than %d bytes", st.Name(), MaxSidecarBytes)
	}
	data, err := os.ReadFile(path + SidecarSuffix)
	if err != nil {
		return nil, rag.E("ingest.ReadSidecar", rag.KindInvalid, err)
	}
	m, err := ParseSidecar(data)
	if err != nil {
		return nil, rag.Errorf("ingest.ReadSidecar", rag.KindInvalid, "%s: %v", st.Name(), err)
	}
	return m, nil
}

// ParseSidecar reads a sidecar's metadata (normalised: rag.Metadata.Normalize's rules); an error
// names what is wrong. Booleans become "true" or "false" (metadata has no booleans).
func ParseSidecar(data []byte) (rag.Metadata, error) {
	var doc struct {
		Attrs map[string]json.RawMessage `json:"metadataAttributes"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf(`not JSON of the form {"metadataAttributes": {...}}: %v`, err)
	}
	if doc.Attrs == nil {
		return nil, fmt.Errorf(`no "metadataAttributes" object`)
	}
	m := rag.Metadata{}
	var probs []string
	keys := make([]string, 0, len(doc.Attrs))
	for k := range doc.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := sidecarValue(doc.Attrs[k])
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: %v", k, err))
			continue
		}
		m[k] = v
	}
	if len(probs) > 0 {
		return nil, errors.New(strings.Join(probs, "; "))
	}
	n, err := m.Normalize()
	if err != nil {
		return nil, err
	}
	return n, nil
}

// sidecarValue reads one attribute, in the plain or the typed form.
func sidecarValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if obj, ok := v.(map[string]any); ok {
		typed, ok := obj["value"].(map[string]any)
		if !ok {
			return nil, errors.New(`an object value needs the typed form {"value": {"type": ..., ...}}`)
		}
		switch typed["type"] {
		case "STRING":
			v = typed["stringValue"]
		case "NUMBER":
			v = typed["numberValue"]
		case "BOOLEAN":
			v = typed["booleanValue"]
		case "STRING_LIST":
			v = typed["stringListValue"]
		default:
			return nil, fmt.Errorf("type %v is not STRING, NUMBER, BOOLEAN or STRING_LIST", typed["type"])
		}
	}
	switch x := v.(type) {
	case bool:
		return fmt.Sprint(x), nil
	case string, json.Number, []any:
		return x, nil
	}
	return nil, errors.New("a value is a string, a number, a boolean or a list of strings")
}
