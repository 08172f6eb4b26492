package rag

import "strings"

// RetiredKBPrefix starts the name a knowledge base takes the moment its delete is recorded:
// "/deleted/<id>". A name with a slash is one no caller can give (ValidateKBName refuses it), so the
// old name is free for a new knowledge base at once, and every read path can tell a knowledge base
// being deleted from its row alone; the name it had is kept with the delete's record.
const RetiredKBPrefix = "/deleted/"

// RetiredKBName is the name of knowledge base id while its delete runs.
func RetiredKBName(id string) string { return RetiredKBPrefix + id }

// Retired reports whether the knowledge base's delete has been recorded: it is invisible to callers.
func (kb KnowledgeBase) Retired() bool { return strings.HasPrefix(kb.Name, RetiredKBPrefix) }
