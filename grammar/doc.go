// Package grammar constrains generation to a language: a context-free
// grammar in llama.cpp's GBNF notation, or a JSON schema turned into one
// (FromJSONSchema), as llama.cpp's server, vLLM's guided decoding and
// TGI's grammars do for any model.
//
// A Grammar is compiled once and shared; a Matcher follows one generation
// through it byte by byte, and Mask says which tokens of a Vocab may come
// next: those whose bytes keep the text a prefix of a sentence of the
// grammar, and the end-of-text tokens once the text is a whole sentence.
// The generation loop gives the others zero probability, so the model's
// odds among the allowed tokens are unchanged.
//
// The recognizer is llama.cpp's: a set of stacks of grammar positions,
// advanced one Unicode code point at a time (bytes of an unfinished UTF-8
// character wait, kept only while some stack can take a character that
// starts so). Stacks and sets of stacks are interned per Matcher, so a
// state reached again (the inside of a string, a list's separator) is one
// number, and its transitions and token mask are computed once.
package grammar
