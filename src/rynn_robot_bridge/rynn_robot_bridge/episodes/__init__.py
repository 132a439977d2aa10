"""Episode bags and directories: the bag writer and the layout that the episode generator
(``rynn_world.episodes``), the clip export and the data engine write."""
