package main

import (
	"fmt"
	"os"
	"os/signal"

	"github.com/tabuladb/tabula/internal/lazyfs"
)

func main() {
	f, err := lazyfs.Mount(os.Args[1], os.Args[2], &lazyfs.Options{Debug: len(os.Args) > 3})
	if err != nil {
		panic(err)
	}
	fmt.Println("mounted")
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	<-c
	f.Cut()
	fmt.Println(f.Unmount(), f.Stats())
}
