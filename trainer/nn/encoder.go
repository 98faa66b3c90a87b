package nn

import "fmt"

// checkToken panics unless token id tok indexes a row of a (rows, C) table
// held in n floats.
func checkToken(what string, t int, tok uint16, n, C int) {
	if (int(tok)+1)*C > n {
		panic(fmt.Sprintf("nn: %s[%d] = %d is outside a table of %d rows", what, t, tok, n/C))
	}
}

// EncoderForward writes the token plus position embedding of each token:
// out[t] = wte[tokens[t]] + wpe[t].
//
//	out    (T, C)
//	tokens (T)
//	wte    (V, C)
//	wpe    (maxT, C), maxT >= T
func EncoderForward(out []float32, tokens []uint16, wte, wpe []float32, T, C int) {
	out = out[:T*C]
	tokens = tokens[:T]
	wpe = wpe[:T*C]
	for t, tok := range tokens {
		checkToken("tokens", t, tok, len(wte), C)
		o := out[t*C : t*C+C]
		e := wte[int(tok)*C : int(tok)*C+C]
		p := wpe[t*C : t*C+C]
		vAdd3(o, e, p)
	}
}

// EncoderBackward scatter-adds dout into the rows of dwte named by tokens and
// adds it into the first T rows of dwpe.
func EncoderBackward(dwte, dwpe, dout []float32, tokens []uint16, T, C int) {
	dout = dout[:T*C]
	tokens = tokens[:T]
	dwpe = dwpe[:T*C]
	for t, tok := range tokens {
		checkToken("tokens", t, tok, len(dwte), C)
		d := dout[t*C : t*C+C]
		e := dwte[int(tok)*C : int(tok)*C+C]
		p := dwpe[t*C : t*C+C]
		vAdd(e, d)
		vAdd(p, d)
	}
}

// EncoderForwardNaive is the reference of EncoderForward.
func EncoderForwardNaive(out []float32, tokens []uint16, wte, wpe []float32, T, C int) {
	for t := 0; t < T; t++ {
		ix := int(tokens[t])
		checkToken("tokens", t, tokens[t], len(wte), C)
		for i := 0; i < C; i++ {
			out[t*C+i] = wte[ix*C+i] + wpe[t*C+i]
		}
	}
}

// EncoderBackwardNaive is the reference of EncoderBackward.
func EncoderBackwardNaive(dwte, dwpe, dout []float32, tokens []uint16, T, C int) {
	for t := 0; t < T; t++ {
		ix := int(tokens[t])
		checkToken("tokens", t, tokens[t], len(dwte), C)
		for i := 0; i < C; i++ {
			d := dout[t*C+i]
			dwte[ix*C+i] += d
			dwpe[t*C+i] += d
		}
	}
}
