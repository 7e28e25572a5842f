"""SQL both backends' memory searches share."""

# Both searches take the best `limit` matches with their sizes first, then
# read the texts of those that fit in the response (`budget` bytes; always
# the first): results are bounded in bytes, not only in count. Each comes
# with the share of the question's terms it holds (`top` names it).
TAKE_WHAT_FITS = """
    ), ranked AS (
        SELECT id, share_of_terms, row_number() OVER best AS position,
               sum(size) OVER best AS running
          FROM top WINDOW best AS (ORDER BY matched DESC, rank_order, timestamp DESC, id)
    )
    SELECT m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text,
           m.content, m.custom_metadata, ranked.share_of_terms
      FROM ranked JOIN memories AS m ON m.id = ranked.id
     WHERE ranked.position = 1 OR ranked.running <= :budget
     ORDER BY ranked.position
"""
