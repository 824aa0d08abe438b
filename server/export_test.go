package server

// TokenizedBytes is how many bytes of user text the server has tokenized.
func TokenizedBytes() int64 { return tokenizedBytes.Load() }
