package weights

import "syscall"

const mapPopulate = syscall.MAP_POPULATE
