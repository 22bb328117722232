package dev.idmint.client;

/** Where a generator's random bits come from: {@link SecureBits} in use; a fixed source in tests. */
interface RandomBits {
    /** 64 random bits. */
    long nextLong();
}
