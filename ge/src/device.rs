//! Lending a device to a session for one run, so the device (and its observer's state)
//! outlives the session.

use ge_runtime::{Device, Error, Memory, Model};

/// A `&mut` device that is itself a [`Device`].
pub struct DeviceRef<'d, D>(pub &'d mut D);

impl<D: Device> Device for DeviceRef<'_, D> {
    type Report = D::Report;

    fn execute(&mut self, model: &Model<'_>, mem: &mut Memory<'_>) -> Result<D::Report, Error> {
        self.0.execute(model, mem)
    }

    fn check(&self, model: &Model<'_>) -> Result<(), Error> {
        self.0.check(model)
    }
}
