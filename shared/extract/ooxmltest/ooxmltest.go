// Package ooxmltest builds small Office Open XML files (docx, xlsx, pptx) for tests and fixtures,
// including hostile ones (hidden runs, bombs, deep nesting). Only tests and fixture generators use it.
package ooxmltest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"html"
	"strings"
)

// Zip writes the named parts (in order) into a zip archive.
func Zip(parts ...[2]string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, p := range parts {
		f, _ := w.Create(p[0])
		f.Write([]byte(p[1]))
	}
	w.Close()
	return b.Bytes()
}

func esc(s string) string { return html.EscapeString(s) }

// Slide is one slide: a title and body paragraphs, optionally a table.
type Slide struct {
	Title  string
	Body   []string
	Table  [][]string
	Hidden bool
}

// PPTX builds a presentation.
func PPTX(slides []Slide) []byte {
	ct := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>`
	var ids, rels strings.Builder
	parts := [][2]string{}
	for i, s := range slides {
		n := i + 1
		ct += fmt.Sprintf(`<Override PartName="/ppt/slides/slide%d.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/>`, n)
		fmt.Fprintf(&ids, `<p:sldId id="%d" r:id="rId%d"/>`, 255+n, n)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide%d.xml"/>`, n, n)
		var body strings.Builder
		for _, p := range s.Body {
			body.WriteString(`<a:p><a:r><a:rPr lang="en-US"/><a:t>` + esc(p) + `</a:t></a:r></a:p>`)
		}
		table := ""
		if len(s.Table) > 0 {
			var rows strings.Builder
			for _, r := range s.Table {
				rows.WriteString(`<a:tr h="370840">`)
				for _, c := range r {
					rows.WriteString(`<a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>` + esc(c) + `</a:t></a:r></a:p></a:txBody></a:tc>`)
				}
				rows.WriteString(`</a:tr>`)
			}
			table = `<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="4" name="Table"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm><a:off x="457200" y="3000000"/><a:ext cx="8000000" cy="1500000"/></p:xfrm><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tblGrid>` +
				strings.Repeat(`<a:gridCol w="2000000"/>`, len(s.Table[0])) + `</a:tblGrid>` + rows.String() + `</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`
		}
		show := ""
		if s.Hidden {
			show = ` show="0"`
		}
		slide := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"` + show + `><p:cSld><p:spTree>
<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>
<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title"/><p:cNvSpPr/><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:spPr><a:xfrm><a:off x="457200" y="274638"/><a:ext cx="8229600" cy="1143000"/></a:xfrm></p:spPr><p:txBody><a:bodyPr/><a:p><a:r><a:t>` + esc(s.Title) + `</a:t></a:r></a:p></p:txBody></p:sp>
<p:sp><p:nvSpPr><p:cNvPr id="3" name="Body"/><p:cNvSpPr/><p:nvPr><p:ph idx="1"/></p:nvPr></p:nvSpPr><p:spPr><a:xfrm><a:off x="457200" y="1600200"/><a:ext cx="8229600" cy="1300000"/></a:xfrm></p:spPr><p:txBody><a:bodyPr/>` + body.String() + `</p:txBody></p:sp>
` + table + `</p:spTree></p:cSld></p:sld>`
		parts = append(parts, [2]string{fmt.Sprintf("ppt/slides/slide%d.xml", n), slide})
	}
	ct += `</Types>`
	pres := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<p:presentation xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:sldIdLst>` + ids.String() + `</p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>`
	all := [][2]string{
		{"[Content_Types].xml", ct},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/></Relationships>`},
		{"ppt/presentation.xml", pres},
		{"ppt/_rels/presentation.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels.String() + `</Relationships>`},
	}
	return Zip(append(all, parts...)...)
}

// DOCX builds a Word document from raw body XML (w: namespace) with a styles part that names
// Heading1..Heading3.
func DOCX(body string) []byte { return DOCXWithParts(body) }

// DOCXWithParts is DOCX with more parts (such as docProps/core.xml).
func DOCXWithParts(body string, parts ...[2]string) []byte {
	styles := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">` +
		`<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="a3"><w:name w:val="标题 3"/></w:style></w:styles>`
	doc := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body + `</w:body></w:document>`
	return Zip(append([][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/styles.xml", styles},
		{"word/document.xml", doc},
	}, parts...)...)
}

// P is a paragraph with an optional style and runs.
func P(style string, runs ...string) string {
	ppr := ""
	if style != "" {
		ppr = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
	}
	return `<w:p>` + ppr + strings.Join(runs, "") + `</w:p>`
}

// R is a visible run; Hidden is a run with w:vanish.
func R(text string) string { return `<w:r><w:t xml:space="preserve">` + esc(text) + `</w:t></w:r>` }

// Hidden is a run Word does not show.
func Hidden(text string) string {
	return `<w:r><w:rPr><w:vanish/></w:rPr><w:t>` + esc(text) + `</w:t></w:r>`
}
