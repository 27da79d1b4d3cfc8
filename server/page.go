package server

// Page sizes of the List calls.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// pageSize reads a request's page_size: 0 means the default.
func pageSize(n int32) (int, error) {
	switch size := int(n); {
	case size == 0:
		return defaultPageSize, nil
	case size < 0 || size > maxPageSize:
		return 0, invalid("page_size %d: expected 1 to %d", size, maxPageSize)
	default:
		return size, nil
	}
}

// ownedPage fills a page of up to size items the tenant owns, reading up to
// ten store pages of size in id order after the cursor *after: the store
// pages every tenant's items, and a page with none of the caller's must not
// end the listing. It leaves *after at the last id read, the next page's
// token; done reports that the store has no more.
func ownedPage[T any](size int, after *string, list func(after string) ([]T, error), id func(T) string, owns func(T) bool) (items []T, done bool, err error) {
	for range 10 {
		page, err := list(*after)
		if err != nil {
			return nil, false, err
		}
		for _, it := range page {
			*after = id(it)
			if owns(it) {
				items = append(items, it)
				if len(items) == size {
					break
				}
			}
		}
		if len(page) < size {
			return items, true, nil
		}
		if len(items) == size {
			break
		}
	}
	return items, false, nil
}
