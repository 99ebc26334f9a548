"""Desktop integration: the freedesktop.org MIME type and thumbnailer for .imi files, and ``imij thumbnail``.

``freedesktop`` writes and removes the shared-mime-info type and the thumbnailer entry (``imij
desktop install/uninstall``); ``thumbnail`` renders the PNG a file manager shows (``imij thumbnail``);
``cli`` adds both commands to ``imij``.
"""
