// world.district's layer of the replay viewer (see view.rs beside this file): the district
// entities' kind (drawn in the district colour) and the kit's counts beside the entities'.
{
  layer({
    kinds: { d: { name: "district entity", count: "district", color: "--district" } },

    empty(s) {
      s.district = null;
    },

    copy(s, c) {
      c.district = s.district;
    },

    apply(s, f) {
      if (f.c) s.district = f.c;
    },

    entityCaption(s) {
      return s.district ? " · district kit: live " + s.district[0] + ", stored " + s.district[1] : "";
    },
  });
}
