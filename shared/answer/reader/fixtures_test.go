package reader

import "github.com/docmind/docmind/shared/answer/answertest"

// The trust fixtures every answer package's tests read (answertest).
var handbook, sales, prices, prose, demoSalesTable = answertest.Handbook, answertest.Sales, answertest.Prices, answertest.Prose, answertest.DemoSalesTable
