//! The bytes of webhook bodies the server holds before their signatures can be checked,
//! charged as they are received: a client that declares a large body and sends nothing
//! holds nothing. All bodies together hold at most the total budget, and the bodies of one
//! client (its address) at most the client budget while they are unverified, so one client
//! can never take the whole budget from a signed delivery. A verified body keeps its share
//! of the total until it is handled.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// The byte budgets and what is charged against them now.
#[derive(Debug)]
pub struct Budget {
    total: Arc<Semaphore>,
    capacity: usize,
    per_client: usize,
    /// Unverified bytes held per client; an entry is removed when it falls to zero, so the
    /// map holds at most one entry per connection reading a body.
    clients: Mutex<HashMap<IpAddr, usize>>,
}

/// Why a body could not be charged: the total budget or its client's is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    Total,
    Client,
}

impl Budget {
    /// `total` bytes in flight over all bodies (at most tokio's `Semaphore::MAX_PERMITS`), of
    /// which one client's unverified bodies hold at most `per_client`.
    pub fn new(total: usize, per_client: usize) -> Self {
        let capacity = total.min(Semaphore::MAX_PERMITS);
        Budget {
            total: Arc::new(Semaphore::new(capacity)),
            capacity,
            per_client: per_client.min(capacity),
            clients: Mutex::default(),
        }
    }

    /// The total budget.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// One client's share of it.
    pub fn per_client(&self) -> usize {
        self.per_client
    }

    /// Bytes free now, over all bodies.
    pub fn available(&self) -> usize {
        self.total.available_permits()
    }

    /// Unverified bytes `client` holds now.
    pub fn held_by(&self, client: IpAddr) -> usize {
        self.ledger().get(&client).copied().unwrap_or(0)
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A charge for one body from `client` (`None`: not known, only the total applies).
    pub fn charge(self: &Arc<Self>, client: Option<IpAddr>) -> Charge {
        Charge {
            budget: self.clone(),
            client,
            held: 0,
            unverified: 0,
        }
    }
}

/// What one body holds of the budget; returned when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    client: Option<IpAddr>,
    /// Bytes held of the total.
    held: usize,
    /// Bytes held of the client's budget (until the signature is checked).
    unverified: usize,
}

impl Charge {
    /// Charge `n` more received bytes, or say which budget is spent (nothing is charged then).
    pub fn take(&mut self, n: usize) -> Result<(), Spent> {
        if n == 0 {
            return Ok(());
        }
        if let Some(client) = self.client {
            let mut ledger = self.budget.ledger();
            let held = ledger.entry(client).or_insert(0);
            if *held + n > self.budget.per_client {
                if *held == 0 {
                    ledger.remove(&client);
                }
                return Err(Spent::Client);
            }
            *held += n;
        }
        // `n` is a frame's length, far below u32::MAX; a larger one can never fit anyway.
        let permit = u32::try_from(n)
            .ok()
            .and_then(|k| self.budget.total.try_acquire_many(k).ok());
        let Some(permit) = permit else {
            if let Some(client) = self.client {
                self.give_back_client(client, n);
            }
            return Err(Spent::Total);
        };
        permit.forget();
        self.held += n;
        if self.client.is_some() {
            self.unverified += n;
        }
        Ok(())
    }

    /// The signature is checked: the client's share is free again; the total's is kept
    /// until the charge is dropped.
    pub fn verified(&mut self) {
        if let Some(client) = self.client {
            self.give_back_client(client, self.unverified);
        }
        self.unverified = 0;
    }

    fn give_back_client(&self, client: IpAddr, n: usize) {
        if n == 0 {
            return;
        }
        let mut ledger = self.budget.ledger();
        if let Some(held) = ledger.get_mut(&client) {
            *held = held.saturating_sub(n);
            if *held == 0 {
                ledger.remove(&client);
            }
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.verified();
        self.budget.total.add_permits(self.held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_charged_as_received_and_returned_when_dropped() {
        let budget = Arc::new(Budget::new(100, 60));
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let mut first = budget.charge(Some(a));
        let mut second = budget.charge(Some(a));
        assert_eq!(first.take(40), Ok(()));
        // The client's share runs out before the total.
        assert_eq!(second.take(30), Err(Spent::Client));
        assert_eq!(budget.held_by(a), 40);
        assert_eq!(second.take(20), Ok(()));
        assert_eq!(budget.held_by(a), 60);
        // Another client has the rest of the total.
        let mut other = budget.charge(Some(b));
        assert_eq!(other.take(41), Err(Spent::Total));
        assert_eq!(budget.held_by(b), 0, "a refused charge holds nothing");
        assert_eq!(other.take(40), Ok(()));
        assert_eq!(budget.available(), 0);
        // Verified: the client's share is free, the total's is kept while it is handled.
        first.verified();
        assert_eq!(budget.held_by(a), 20);
        assert_eq!(budget.available(), 0);
        drop(first);
        assert_eq!(budget.available(), 40);
        drop(second);
        drop(other);
        assert_eq!(budget.available(), 100);
        assert!(budget.ledger().is_empty(), "no client left behind");
        // An unknown client is bounded by the total only.
        let mut unknown = budget.charge(None);
        assert_eq!(unknown.take(100), Ok(()));
        assert_eq!(unknown.take(1), Err(Spent::Total));
    }
}
