"""Operations: one typed function per thing a user can do; every interface calls these."""
