package kernels

// panelOf writes the transpose of an n-row panel, whose row r is
// row(r)[:cols], into dst as [cols][n]: dst[k*n+r] = row(r)[k], the slab
// layout's panel (slab rows of a weight, each transposed). Four rows go
// at a time, so that each of dst's cache lines is written once for four
// rows where a row at a time wrote it four times, and four source rows
// stream in order: a load of an 8B model moves 16 GB through here.
func panelOf[T weight](dst []T, n, cols int, row func(r int) []T) {
	r := 0
	for ; r+4 <= n; r += 4 {
		a, b, c, d := row(r)[:cols], row(r + 1)[:cols], row(r + 2)[:cols], row(r + 3)[:cols]
		for k := range cols {
			o := dst[k*n+r : k*n+r+4 : k*n+r+4]
			o[0], o[1], o[2], o[3] = a[k], b[k], c[k], d[k]
		}
	}
	for ; r < n; r++ {
		for k, v := range row(r)[:cols] {
			dst[k*n+r] = v
		}
	}
}
