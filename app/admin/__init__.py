"""The operator's commands (`apps`, `sessions list`, `sessions show`, `sweep`)
and the reads behind them."""
