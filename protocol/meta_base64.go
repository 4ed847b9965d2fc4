package protocol

import "encoding/base64"

// Base64 keys of the meta protocol (flag b). memcached decodes them with
// its own lenient decoder (base64.c, after Jouni Malinen's), whose results
// clients can observe: bytes outside the alphabet are skipped, decoding
// stops after the first block holding padding, and the key it returns in k
// flags is the decoded key encoded again. tandem reproduces that decoder.

// b64Invalid marks a byte outside the base64 alphabet in b64Table.
const b64Invalid = 0x80

// b64Table maps a byte to its 6-bit value; '=' maps to 0 like memcached's
// table (it counts as an alphabet byte).
var b64Table = func() (t [256]byte) {
	for i := range t {
		t[i] = b64Invalid
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	t['='] = 0
	return t
}()

// DecodeBase64Key decodes a base64 key into dst exactly as memcached 1.6.18
// does and returns the decoded length; 0 means the key is invalid (memcached
// treats an empty result as a failure too). dst must have room for
// len(src)*3/4 bytes; it may be nil to only validate.
func DecodeBase64Key(dst, src []byte) int {
	count := 0
	for _, c := range src {
		if b64Table[c] != b64Invalid {
			count++
		}
	}
	if count == 0 || count%4 != 0 {
		return 0
	}
	var block [4]byte
	pos, k, pad := 0, 0, 0
	for _, c := range src {
		v := b64Table[c]
		if v == b64Invalid {
			continue
		}
		if c == '=' {
			pad++
		}
		block[k] = v
		k++
		if k < 4 {
			continue
		}
		if dst != nil {
			dst[pos] = block[0]<<2 | block[1]>>4
			dst[pos+1] = block[1]<<4 | block[2]>>2
			dst[pos+2] = block[2]<<6 | block[3]
		}
		pos += 3
		k = 0
		if pad > 0 {
			if pad > 2 {
				return 0 // invalid padding
			}
			pos -= pad
			break
		}
	}
	return pos
}

// AppendBase64 appends the standard base64 encoding (with padding) of src,
// the form in which memcached returns binary keys.
func AppendBase64(dst, src []byte) []byte {
	return base64.StdEncoding.AppendEncode(dst, src)
}
