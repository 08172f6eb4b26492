package calibrate

import "github.com/docmind/docmind/shared/rank"

// ev is a retrieved passage of file holding text.
func ev(file, text string, score float64) rank.Evidence {
	return rank.Evidence{ChunkID: "c_" + file, DocumentID: "doc_" + file, KBID: "kb_1", FileName: file, Text: text, ChildText: text, Score: score}
}
