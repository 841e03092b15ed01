"""Human in the loop. The worker's side: which calls need a person (`policy`) and parking a
run on one (`parking`). The person's side: deciding (`decisions`), remembered rules and YOLO
mode (`rules`). Reads (`selectors`) and the JSON shape of an approval (`presenters`)."""
