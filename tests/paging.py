"""Walking a paged list of the API to its end."""


async def every_item(client, path, items, **params):
    """The `items` of every page of the list at `path`, in page order; fails on
    an error, on a page larger than `pageSize`, and on pages that never end."""
    collected, token = [], None
    for _ in range(100):
        query = {**params, **({"pageToken": token} if token is not None else {})}
        response = await client.get(path, params=query)
        assert response.status_code == 200, response.text
        page = response.json()
        if "pageSize" in params:
            assert len(page[items]) <= params["pageSize"]
        collected += page[items]
        token = page["nextPageToken"]
        if token is None:
            return collected
    raise AssertionError("the pages never end")
