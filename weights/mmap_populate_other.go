//go:build unix && !linux

package weights

const mapPopulate = 0
