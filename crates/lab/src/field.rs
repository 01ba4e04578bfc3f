//! The fields of a lab request (`lab run`, `lab kernel build`) as the lab's errors and hints
//! name them; the caller renders each token ([`rtscope_model::field::render`]).

rtscope_model::request_fields! {
    pub enum Field in "lab" {
        Kernel = "kernel" => KERNEL,
        Preset = "preset" => PRESET,
        Force = "force" => FORCE,
        Preempt = "preempt" => PREEMPT,
        Icount = "icount" => ICOUNT,
        GuestBin = "guest_bin" => GUEST_BIN,
        Smp = "smp" => SMP,
        Mem = "mem" => MEM,
        Timeout = "timeout" => TIMEOUT,
        NicLoad = "nic_load" => NIC_LOAD,
    }
}
