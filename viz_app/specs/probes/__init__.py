"""The Layer probes page (address `probes`): its data (`data`), its runs (`runs`) and their results (`results`)."""
