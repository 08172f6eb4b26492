//go:build bench_compare

package bench

import (
	"context"
	"runtime"

	chromem "github.com/philippgille/chromem-go"
	"github.com/tmc/langchaingo/textsplitter"
)

// The peers a user might pick instead: LangChainGo's splitters and chromem-go's exact search.

const peersLinked = true

type splitter struct {
	name  string
	split func(string) []string
}

func runeLen(s string) int { return len([]rune(s)) }

func lcSplit(sp textsplitter.TextSplitter) func(string) []string {
	return func(s string) []string {
		out, err := sp.SplitText(s)
		if err != nil {
			return nil
		}
		return out
	}
}

func peerSplitters() []splitter {
	cjk := []string{"\n\n", "\n", "。", "！", "？", "；", ". ", " ", ""}
	return []splitter{
		{"LangChainGo recursive (defaults)", lcSplit(textsplitter.NewRecursiveCharacter())},
		{"LangChainGo recursive (400/50, CJK separators)", lcSplit(textsplitter.NewRecursiveCharacter(
			textsplitter.WithChunkSize(400), textsplitter.WithChunkOverlap(50), textsplitter.WithSeparators(cjk), textsplitter.WithLenFunc(runeLen)))},
		{"LangChainGo markdown (400/50)", lcSplit(textsplitter.NewMarkdownTextSplitter(
			textsplitter.WithChunkSize(400), textsplitter.WithChunkOverlap(50), textsplitter.WithLenFunc(runeLen)))},
	}
}

func peerVector(dim int, ids []string, data []float32) (func(q []float32), string, error) {
	db := chromem.NewDB()
	col, err := db.CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) { return nil, nil })
	if err != nil {
		return nil, "", err
	}
	docs := make([]chromem.Document, len(ids))
	for i, id := range ids {
		docs[i] = chromem.Document{ID: id, Embedding: data[i*dim : (i+1)*dim], Content: "x"}
	}
	if err := col.AddDocuments(context.Background(), docs, runtime.NumCPU()); err != nil {
		return nil, "", err
	}
	return func(q []float32) { col.QueryEmbedding(context.Background(), q, 10, nil, nil) }, "chromem-go", nil
}
