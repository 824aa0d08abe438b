package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/llorch/llorch-check/model"
)

func rssKB() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS") {
			v, _ := strconv.Atoi(strings.Fields(l)[1])
			return v
		}
	}
	return 0
}

func main() {
	start := time.Now()
	done := make(chan bool)
	go func() {
		last := 0
		for {
			select {
			case <-done:
				return
			default:
			}
			r := rssKB()
			if r/2048 != last/2048 {
				fmt.Printf("%6.0f ms %d MB\n", time.Since(start).Seconds()*1000, r/1024)
				last = r
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	_, err := model.LoadWith(os.Args[1], model.LoadOptions{})
	if err != nil {
		panic(err)
	}
	close(done)
	fmt.Println("loaded", time.Since(start), rssKB()/1024)
}
