//go:build !unix

package regularfile

import "os"

const readFlags = os.O_RDONLY
