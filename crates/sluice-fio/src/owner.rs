//! Who a block-layer request belongs to.
//!
//! The block layer carries one `u64` token per request and hands it back in its
//! [`Finished`](sluice_block::Finished). In a world that runs fio jobs a request is
//! either a job thread's own I/O (direct jobs) or a device read, writeback or flush of
//! the [buffered front](crate::front) (buffered jobs). Each world routes a completion
//! by [`Owner::of`] its token; this type is the one place that encodes and decodes it.

/// The owner of a block-layer request in a world that runs fio jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A job's I/O; the number is the world's own (the simulator's thread index, the
    /// engine's ring slot).
    Job(u32),
    /// The buffered front's device request number `seq` (below 2^63).
    Front(u64),
}

/// The bit of a token that marks the front's requests.
const FRONT: u64 = 1 << 63;

impl Owner {
    /// The block-layer token that carries this owner.
    ///
    /// # Panics
    /// If a front sequence number reaches 2^63 (it counts requests from 0).
    pub fn token(self) -> u64 {
        match self {
            Owner::Job(n) => n as u64,
            Owner::Front(seq) => {
                assert!(seq < FRONT, "front request number {seq} out of range");
                seq | FRONT
            }
        }
    }

    /// The owner a token carries.
    ///
    /// # Panics
    /// If `token` was not made by [`Owner::token`] (a job number above `u32::MAX`).
    pub fn of(token: u64) -> Owner {
        if token & FRONT != 0 {
            Owner::Front(token & !FRONT)
        } else {
            Owner::Job(u32::try_from(token).expect("a job token made by Owner::token"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Owner;

    #[test]
    fn tokens_round_trip_and_never_collide() {
        for o in [
            Owner::Job(0),
            Owner::Job(u32::MAX),
            Owner::Front(0),
            Owner::Front((1 << 63) - 1),
        ] {
            assert_eq!(Owner::of(o.token()), o);
        }
        assert_ne!(Owner::Job(7).token(), Owner::Front(7).token());
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn a_front_number_past_the_marker_bit_is_refused() {
        Owner::Front(1 << 63).token();
    }
}
