package extract

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
)

// Document properties (issue #23): what a file says about itself, recorded as the document's
// metadata below its front matter and sidecar (docs/metadata-filters.md). Keys: title, author,
// created, modified (RFC 3339, UTC) and keywords (comma-separated). Values are untrusted text from
// the file: they are bounded here and validated again as metadata.

const maxPropertyLen = 512

// setProperty records a cleaned, non-empty value.
func setProperty(props map[string]string, key, v string) {
	v, _ = Clean(strings.TrimSpace(v))
	v = strings.Join(strings.Fields(v), " ")
	if v == "" {
		return
	}
	if len(v) > maxPropertyLen {
		v = strings.ToValidUTF8(v[:maxPropertyLen], "")
	}
	props[key] = v
}

// docxProperties reads docProps/core.xml (Dublin Core: dc:title, dc:creator, dcterms:created,
// dcterms:modified, cp:keywords); nil when the part is missing or holds nothing.
func docxProperties(ctx context.Context, a *archive) (map[string]string, error) {
	core, err := a.xml(ctx, "docProps/core.xml")
	if err != nil || core == nil {
		return nil, err
	}
	root := core.child("coreProperties")
	if root == nil {
		return nil, nil
	}
	props := map[string]string{}
	text := func(name string) string {
		if n := root.child(name); n != nil {
			return n.text.String()
		}
		return ""
	}
	setProperty(props, "title", text("title"))
	setProperty(props, "author", text("creator"))
	setProperty(props, "keywords", strings.ReplaceAll(text("keywords"), ";", ","))
	for _, k := range []string{"created", "modified"} {
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(text(k))); err == nil && t.Year() > 1 {
			props[k] = t.UTC().Format(time.RFC3339)
		}
	}
	if len(props) == 0 {
		return nil, nil
	}
	return props, nil
}

// pdfProperties reads the Info dictionary (Title, Author, CreationDate, ModDate, Keywords); nil when
// it holds nothing. A tag that cannot be read is skipped: properties never fail an extraction.
func pdfProperties(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT) map[string]string {
	props := map[string]string{}
	get := func(tag string) string {
		r, err := inst.FPDF_GetMetaText(&requests.FPDF_GetMetaText{Document: doc, Tag: tag})
		if err != nil || r == nil {
			return ""
		}
		return r.Value
	}
	setProperty(props, "title", get("Title"))
	setProperty(props, "author", get("Author"))
	setProperty(props, "keywords", strings.ReplaceAll(get("Keywords"), ";", ","))
	for key, tag := range map[string]string{"created": "CreationDate", "modified": "ModDate"} {
		if t, ok := PDFDate(get(tag)); ok {
			props[key] = t.UTC().Format(time.RFC3339)
		}
	}
	if len(props) == 0 {
		return nil
	}
	return props
}

// pdfDate is a PDF date (PDF 32000-1 7.9.4): D:YYYYMMDDHHmmSSOHH'mm, every part after the year optional.
var pdfDate = regexp.MustCompile(`^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:([Zz+-])(\d{2})?'?(\d{2})?'?)?$`)

// PDFDate parses a PDF date string; false for anything else.
func PDFDate(s string) (time.Time, bool) {
	m := pdfDate.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return time.Time{}, false
	}
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	zone := "Z"
	if m[7] == "+" || m[7] == "-" {
		zone = m[7] + or(m[8], "00") + ":" + or(m[9], "00")
	}
	v := m[1] + "-" + or(m[2], "01") + "-" + or(m[3], "01") + "T" + or(m[4], "00") + ":" + or(m[5], "00") + ":" + or(m[6], "00") + zone
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}
