//go:build tools

package tools

import (
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/olekukonko/tablewriter"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "gonum.org/v1/gonum/mat"
	_ "golang.org/x/term"
	_ "pgregory.net/rapid"
)
