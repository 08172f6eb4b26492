package llm_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/llm/llmtest"
)

// An image goes to the model as a content part after the text, as a base64 data URL: the form
// OpenAI-compatible APIs read.
func TestStreamSendsImages(t *testing.T) {
	fake := llmtest.New(t, func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Content: "# Page"} })
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: "system", Content: "transcribe"},
		{Role: "user", Content: "page 1", Images: []llm.Image{{MIME: "image/png", Data: png}}}}}
	var got string
	if _, err := llm.NewOpenAI(fake.URL, "k", nil).Stream(context.Background(), req, func(s string) error { got += s; return nil }); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	if len(calls) != 1 || got != "# Page" {
		t.Fatalf("calls %d, got %q", len(calls), got)
	}
	user := calls[0].Messages[1]
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	if user.Content != "page 1" || len(user.Images) != 1 || user.Images[0] != want || calls[0].Messages[0].Content != "transcribe" {
		t.Fatalf("the model received %+v", calls[0].Messages)
	}
}

// A call cut before the provider reported its usage is estimated with each image's tokens.
func TestMeterEstimatesImages(t *testing.T) {
	fake := llmtest.New(t, func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Content: "several words of text", CutAfter: 1} })
	m := &llm.Meter{}
	ctx := llm.WithMeter(context.Background(), m)
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "x", Images: []llm.Image{{MIME: "image/png", Data: []byte("a")}, {MIME: "image/png", Data: []byte("b")}}}}}
	llm.NewOpenAI(fake.URL, "k", nil).Stream(ctx, req, func(string) error { return nil })
	if n := m.Tokens(); n < 2*llm.ImageTokens {
		t.Fatalf("%d tokens counted, want an estimate counting two images (%d tokens each)", n, llm.ImageTokens)
	}
}
