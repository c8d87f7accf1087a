"""What the gateway tells about itself: the access log (`access`), the metrics it counts per request
(`metrics`) and what ``GET /metrics`` reads from Redis when scraped (`scrape`)."""
