// Dial ADDR with crypto/tls's default client configuration and server name example.com: its
// ClientHello is what scripts/record-clienthellos.sh records for the `go` preset.
package main

import (
	"crypto/tls"
	"os"
)

func main() {
	c, err := tls.Dial("tcp", os.Args[1], &tls.Config{ServerName: "example.com"})
	if err == nil {
		c.Close()
	}
}
