package broker

// Encrypted private keys (ssl.key.password): a PKCS#8 EncryptedPrivateKeyInfo
// ("ENCRYPTED PRIVATE KEY" PEM, RFC 5958) protected with PBES2 (RFC 8018):
// PBKDF2 with HMAC-SHA1/224/256/384/512 deriving an AES-128/192/256-CBC key.
// That is what `openssl pkcs8 -topk8` and Java's keytool write by default
// and what Kafka reads with ssl.key.password. The older PBES1 schemes and
// OpenSSL's traditional "Proc-Type: 4,ENCRYPTED" PEM (which Kafka does not
// read either) are refused with a message.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1" //nolint:gosec // HMAC-SHA1 is PBKDF2's default PRF, still what many keys are encrypted with
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"strings"
)

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	// pbkdf2PRFs are the HMACs PBKDF2 may use, by OID.
	pbkdf2PRFs = map[string]func() hash.Hash{
		"1.2.840.113549.2.7":  sha1.New,
		"1.2.840.113549.2.8":  sha256.New224,
		"1.2.840.113549.2.9":  sha256.New,
		"1.2.840.113549.2.10": sha512.New384,
		"1.2.840.113549.2.11": sha512.New,
	}
	// aesCBCKeySizes are the AES-CBC encryption schemes, by OID.
	aesCBCKeySizes = map[string]int{
		"2.16.840.1.101.3.4.1.2":  16,
		"2.16.840.1.101.3.4.1.22": 24,
		"2.16.840.1.101.3.4.1.42": 32,
	}
)

// maxPBKDF2Iterations bounds the work a key file can ask for.
const maxPBKDF2Iterations = 1 << 24

type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                      `asn1:"optional"`
	PRF            pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptKeyPEM returns the private key of data (PEM, perhaps holding
// certificates too) as an unencrypted PEM block when it is encrypted with
// PBES2, else data as it is. An encrypted key without a password, with
// the wrong one or in a scheme not read here is an error.
func decryptKeyPEM(data []byte, password string) ([]byte, error) {
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return data, nil
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") && b.Headers["Proc-Type"] != "" {
			return nil, errors.New("the private key is encrypted in OpenSSL's traditional format, which Kafka does not read either; " +
				"convert it to PKCS#8 (openssl pkcs8 -topk8)")
		}
		if b.Type != "ENCRYPTED PRIVATE KEY" {
			continue
		}
		if password == "" {
			return nil, errors.New("the private key is encrypted and ssl.key.password is not set")
		}
		der, err := decryptPKCS8(b.Bytes, []byte(password))
		if err != nil {
			return nil, fmt.Errorf("encrypted private key: %w", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	}
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo into a PKCS#8
// PrivateKeyInfo, checking that it parses.
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("not a PKCS#8 EncryptedPrivateKeyInfo")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encryption %s is not PBES2 (re-encrypt with openssl pkcs8 -topk8 -v2 aes256)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if rest, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil || len(rest) > 0 {
		return nil, errors.New("bad PBES2 parameters")
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("key derivation %s is not PBKDF2", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if rest, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil || len(rest) > 0 {
		return nil, errors.New("bad PBKDF2 parameters")
	}
	prf := sha1.New
	if len(kdf.PRF.Algorithm) > 0 {
		var ok bool
		if prf, ok = pbkdf2PRFs[kdf.PRF.Algorithm.String()]; !ok {
			return nil, fmt.Errorf("PBKDF2 PRF %s is not HMAC-SHA1/224/256/384/512", kdf.PRF.Algorithm)
		}
	}
	keyLen, ok := aesCBCKeySizes[params.EncryptionScheme.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("cipher %s is not AES-CBC (re-encrypt with openssl pkcs8 -topk8 -v2 aes256)", params.EncryptionScheme.Algorithm)
	}
	switch {
	case kdf.KeyLength != 0 && kdf.KeyLength != keyLen:
		return nil, fmt.Errorf("PBKDF2 key length %d does not fit the cipher", kdf.KeyLength)
	case kdf.IterationCount < 1 || kdf.IterationCount > maxPBKDF2Iterations:
		return nil, fmt.Errorf("PBKDF2 iteration count %d out of range", kdf.IterationCount)
	}
	var iv []byte
	if rest, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil || len(rest) > 0 || len(iv) != aes.BlockSize {
		return nil, errors.New("bad AES-CBC IV")
	}
	if len(info.EncryptedData) == 0 || len(info.EncryptedData)%aes.BlockSize != 0 {
		return nil, errors.New("encrypted data is not whole AES blocks")
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.IterationCount, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	plain := make([]byte, len(info.EncryptedData))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, info.EncryptedData)
	// PKCS#7 padding; a wrong password shows here, or in the parse.
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > aes.BlockSize || !bytes.Equal(plain[len(plain)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errors.New("cannot decrypt it: wrong ssl.key.password?")
	}
	plain = plain[:len(plain)-pad]
	if _, err := x509.ParsePKCS8PrivateKey(plain); err != nil {
		return nil, errors.New("cannot decrypt it: wrong ssl.key.password?")
	}
	return plain, nil
}
