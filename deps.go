//go:build tools

package tools

import (
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/olekukonko/tablewriter"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/term"
	_ "gonum.org/v1/gonum/mat"
	_ "pgregory.net/rapid"
)
