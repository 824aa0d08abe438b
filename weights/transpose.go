package weights

// Transpose returns the [cols,rows] transpose of a row-major [rows,cols].
// It goes in 32×32 tiles, so that both sides stay in cache: element by
// element, every write of a 768-row matrix's column missed.
func Transpose[T float32 | uint16](src []T, rows, cols int) []T {
	const tile = 32
	dst := make([]T, len(src))
	for r0 := 0; r0 < rows; r0 += tile {
		for c0 := 0; c0 < cols; c0 += tile {
			for r := r0; r < min(r0+tile, rows); r++ {
				for c := c0; c < min(c0+tile, cols); c++ {
					dst[c*rows+r] = src[r*cols+c]
				}
			}
		}
	}
	return dst
}
