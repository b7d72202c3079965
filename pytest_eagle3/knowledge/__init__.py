"""Every row of engine and producer knowledge, typed, with a source per row: the release list, the table type,
the behaviours per engine version, the draft classes, capture and reach, launches, and the generated scans."""
