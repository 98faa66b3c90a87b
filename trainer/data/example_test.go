package data_test

import (
	"fmt"

	"memprobe/trainer/data"
)

func ExampleParseSize() {
	for _, s := range []string{"24MB", "512KB", "1GiB", "3000"} {
		n, _ := data.ParseSize(s)
		fmt.Println(s, n)
	}
	// Output:
	// 24MB 24000000
	// 512KB 512000
	// 1GiB 1073741824
	// 3000 3000
}

func ExampleLoad() {
	d, err := data.Load("synthetic:24MB", 788, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(d.Tokens), "tokens,", d.Vocab, "ids,", d.Bytes(), "bytes")
	// Output: 4800000 tokens, 788 ids, 9600000 bytes
}

func ExampleCharTokenizer() {
	tok, _ := data.NewCharTokenizer("hello world", 256)
	ids, _ := tok.Encode("hold")
	fmt.Println(tok.Size(), ids, tok.Decode(ids))
	// Output: 8 [3 5 4 1] hold
}
